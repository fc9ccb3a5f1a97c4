// Package placement is Basin's cache-aware placement: a mutating admission
// webhook, served by the controller plugin, that prefers (never requires)
// the nodes whose caches hold a new pod's Basin volumes.
//
// On pod CREATE the webhook follows each persistentVolumeClaim volume to
// its bound PersistentVolume; for a volume of this driver that is not
// opted out (volume attribute cacheAffinity: "false"), it reads the
// VolumeCache objects labelled with the volume's name from the manager's
// cache and adds one preferredDuringSchedulingIgnoredDuringExecution
// node-affinity term per warm node (matchFields metadata.name), weighted
// 1-100 by how much of the pod's data the node holds (weights.go). The
// pod's own affinity is kept as written. The annotation
// basin.csi.dev/cache-affinity says why a pod got, or did not get, a
// preference.
//
// The webhook fails open (failurePolicy Ignore in its configuration): a
// controller that is down or slow delays nothing but the preference. Its
// TLS is its own (certs.go, rotate.go): a CA and a serving certificate
// made with crypto/x509, kept in a Secret in the controller's namespace so
// replicas and restarts share them, served from memory, renewed before
// they expire, and the CA bundle patched into the
// MutatingWebhookConfiguration it ships with.
package placement

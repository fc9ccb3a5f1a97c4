// Package manifests tests Basin's Kubernetes manifests and their
// documentation; it has no code of its own.
//
// Every YAML document under deploy/ and examples/ is decoded strictly into
// its k8s.io/api type (unknown fields, duplicate fields and unknown kinds
// fail), every StorageClass parameter map and PersistentVolume
// volumeAttributes map of basin.csi.dev goes through volumeattr.Parse with
// the secrets it references, pods that mount a PVC must use
// mountPropagation: HostToContainer, the kustomization must list exactly
// the files next to it, and docs/kubernetes.md must document every
// attribute and secret key with the parser's defaults.
package manifests

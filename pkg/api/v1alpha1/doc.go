// Package v1alpha1 is Basin's Kubernetes API, group basin.csi.dev: the
// objects through which Basin's node caches take part in a cluster.
//
//   - VolumeCache says what one node's cache holds of one Basin volume.
//     The node plugin of that node is its only writer; it keeps it current
//     within a minute and deletes it when the node no longer holds the
//     volume. One object per (volume, node) pair keeps every write small and
//     uncontended on clusters of hundreds of nodes and thousands of volumes.
//   - Warmup asks for a volume to be preloaded on chosen nodes. The Basin
//     controller runs the preload (csi-driver warmup in a pod per node),
//     reports progress and whether the data fits in the cache, and removes
//     what it started.
//
// The types carry no behaviour (FormatSize only fixes the format of their
// size fields for people); their CustomResourceDefinitions are
// generated from them (make generate) into deploy/kubernetes/crds.
//
// +kubebuilder:object:generate=true
// +groupName=basin.csi.dev
package v1alpha1

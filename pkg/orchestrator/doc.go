// Package orchestrator runs Basin's Kubernetes controllers inside the
// controller plugin (csi-driver controller --orchestrate): the garbage
// collection of VolumeCache objects, the Warmup controller and the
// cache-aware placement webhook. They share one controller-runtime
// manager, one API client and cache, and one leader election; the webhook
// serves on every replica, the reconcilers on the leader only.
//
// Run blocks until its context ends. It never touches the object store
// and knows nothing of CSI: it works on API objects only (pkg/api).
package orchestrator

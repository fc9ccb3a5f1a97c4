// Package cachestatus puts the node caches' content in the API: one
// VolumeCache object (pkg/api/v1alpha1) per PersistentVolume and node
// whose cache holds it.
//
// The node plugin runs a Reporter: every interval (and soon after a stage
// or unstage) it reads the usage file of every cache directory under its
// cache root (internal/cacheusage: no lock, so staged and unstaged caches
// alike), maps each volume handle to its PersistentVolumes (a read-only
// informer on PersistentVolumes, pvindex.go), and writes an object's
// status only when it changed or its last write is older than the refresh
// period. Objects of this node whose cache or PersistentVolume is gone are
// deleted. API failures are logged and retried with backoff; CSI calls
// never wait for the reporter.
//
// The orchestrator runs Cleanup (cleanup.go): it deletes VolumeCache
// objects whose PersistentVolume or Node is gone, and those no node plugin
// refreshed for far longer than the refresh period.
//
// Layout: naming.go (object names), status.go (status from a cache's
// usage, and when to write it), pvindex.go, reporter.go, cleanup.go.
package cachestatus

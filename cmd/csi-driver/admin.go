package main

import (
	"os"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/klog/v2"

	"github.com/basin-csi/basin/pkg/admin"
	"github.com/basin-csi/basin/pkg/cache"
	"github.com/basin-csi/basin/pkg/fuse"
	"github.com/basin-csi/basin/pkg/metrics"
	"github.com/basin-csi/basin/pkg/objstore"
)

// mountAdmin is the observability of one `csi-driver mount` process: a
// per-process metrics registry, the bucket-request decorator feeding it,
// and the admin socket (<cache dir>/admin.sock) serving the metrics and
// cache inspection to the node plugin and `csi-driver cache`. A mount
// works without it: failures are logged, never fatal. A nil *mountAdmin
// does nothing. Its methods are called by the mount session's owner, one
// at a time.
type mountAdmin struct {
	// constant
	volumeID, cacheDir string
	started            time.Time
	reg                *prometheus.Registry  // nil if the registry failed
	bucket             *metrics.StoreMetrics // nil if the registry failed

	srv *admin.Server // set by serve, cleared by close
}

// newMountAdmin creates the registry of a mount's process.
func newMountAdmin(cfg mountConfig) *mountAdmin {
	a := &mountAdmin{volumeID: cfg.VolumeID, cacheDir: cfg.CacheDir, started: time.Now()}
	reg, sm, err := metrics.NewProcessRegistry()
	if err != nil {
		klog.ErrorS(err, "Metrics unavailable", "volume", a.volumeID)
		return a
	}
	a.reg, a.bucket = reg, sm
	return a
}

// instrument wraps the store so every bucket request is counted and
// timed.
func (a *mountAdmin) instrument(s objstore.Store) objstore.Store {
	if a == nil || a.bucket == nil {
		return s
	}
	return a.bucket.Wrap(s)
}

// serve starts collecting from the open cache and file system and
// serving the admin socket.
func (a *mountAdmin) serve(c *cache.Cache, fsys *fuse.FS) {
	if a == nil {
		return
	}
	var g prometheus.Gatherer
	if a.reg != nil {
		if err := metrics.RegisterSources(a.reg, metrics.Sources{Cache: c.Stats, Pinned: c.PinnedObjects, FS: fsys.Stats}); err != nil {
			klog.ErrorS(err, "Cache metrics unavailable", "volume", a.volumeID)
		}
		g = a.reg
	}
	info := admin.Info{VolumeID: a.volumeID, CacheDir: a.cacheDir, PID: os.Getpid(), Started: a.started, Version: version}
	vol := admin.ForCache(c, info, func() admin.FSStats {
		s := fsys.Stats()
		return admin.FSStats{PassthroughOpens: s.PassthroughOpens, UserOpens: s.UserOpens}
	})
	path := admin.SocketPath(a.cacheDir)
	srv, err := admin.Serve(path, admin.Handler(vol, info, g))
	if err != nil {
		klog.ErrorS(err, "Admin socket unavailable: no metrics or cache inspection for this volume", "volume", a.volumeID)
		return
	}
	a.srv = srv
	klog.V(2).InfoS("Admin socket serving", "volume", a.volumeID, "socket", path)
}

// close stops the admin socket (before the cache closes).
func (a *mountAdmin) close() {
	if a == nil || a.srv == nil {
		return
	}
	if err := a.srv.Close(); err != nil {
		klog.ErrorS(err, "Closing the admin socket", "volume", a.volumeID)
	}
	a.srv = nil
}

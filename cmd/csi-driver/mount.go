package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"runtime/pprof"

	"k8s.io/klog/v2"

	"github.com/basin-csi/basin/pkg/cache"
	"github.com/basin-csi/basin/pkg/cache/tier"
	"github.com/basin-csi/basin/pkg/fuse"
	"github.com/basin-csi/basin/pkg/objstore"
	"github.com/basin-csi/basin/pkg/objstore/backend"
)

// runMount is `csi-driver mount`: parse, open store and cache, serve until
// ctx ends (SIGINT/SIGTERM), unmount.
func runMount(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	cfg, err := parseMountArgs(args)
	if errors.Is(err, flag.ErrHelp) {
		mountUsage(stdout)
		return nil
	}
	if err != nil {
		return withExitCode(fmt.Errorf("%w\n(see csi-driver mount --help)", err))
	}
	if cfg.Debug {
		var kf flag.FlagSet
		klog.InitFlags(&kf)
		_ = kf.Set("v", "4")
	}
	if cfg.CPUProfile != "" {
		stop, err := startCPUProfile(cfg.CPUProfile)
		if err != nil {
			return withExitCode(err)
		}
		defer stop()
	}
	return withExitCode(serveMount(ctx, cfg))
}

// startCPUProfile starts a CPU profile into path; stop ends and writes it.
func startCPUProfile(path string) (stop func(), err error) {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o600)
	if err != nil {
		return nil, fmt.Errorf("--cpu-profile: %w", err)
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		_ = f.Close()
		return nil, fmt.Errorf("--cpu-profile: %w", err)
	}
	return func() {
		pprof.StopCPUProfile()
		if err := f.Close(); err != nil {
			klog.ErrorS(err, "write CPU profile", "file", path)
		}
	}, nil
}

// serveMount runs one mount described by a validated config until ctx ends
// or the mount goes away.
func serveMount(ctx context.Context, cfg mountConfig) error {
	tl := newTimeline()
	s, err := openMount(ctx, cfg, nil, tl)
	if errors.Is(err, errStandbyReleased) {
		klog.InfoS("standby released, exiting", "volume", cfg.VolumeID)
		return nil
	}
	if err != nil && ctx.Err() != nil {
		// SIGTERM/SIGINT while mounting: Mount undid itself; a clean exit.
		klog.InfoS("signal received while mounting, exiting", "volume", cfg.VolumeID, "err", err)
		return nil
	}
	if err != nil {
		return err
	}
	defer s.close()
	gcCtx, stopGC := context.WithCancel(ctx)
	defer stopGC()
	go tuneMountGC(gcCtx, s.cache)
	klog.InfoS("serving", "volume", cfg.VolumeID, "source", cfg.Spec.SourceURL(),
		"mountpoint", cfg.Mountpoint, "cacheDir", cfg.CacheDir, "resumed", cfg.Resume, "start", tl)
	select {
	case <-ctx.Done():
		klog.InfoS("signal received, unmounting", "volume", cfg.VolumeID, "mountpoint", cfg.Mountpoint)
		return s.mounted.Unmount()
	case <-s.mounted.Done():
		klog.InfoS("mount went away", "volume", cfg.VolumeID, "mountpoint", cfg.Mountpoint)
		return nil
	}
}

// mountSession is one open store, cache and mounted file system.
type mountSession struct {
	store objstore.Store
	// tier and tierStore are the shared cache tier (nil: none).
	tier      *tier.Tier
	tierStore objstore.Store
	cache     *cache.Cache
	mounted   *fuse.Mounted
	admin     *mountAdmin // metrics and the admin socket (admin.go)
}

// openMount opens the store (wrapped by wrap when not nil), the cache and
// the file system, and mounts it. close releases them in reverse order.
// tl (nil: none) records when each step was done.
func openMount(ctx context.Context, cfg mountConfig, wrap func(objstore.Store) objstore.Store, tl *timeline) (*mountSession, error) {
	mark := func(string) {}
	if tl != nil {
		mark = tl.mark
	}
	mark("config")
	// The hand-off file's credentials (zero: the backend's default chain),
	// or a newer rotation; SIGHUP switches to the next (credentials_rotate.go).
	creds, rotation, err := startCredentials(cfg)
	if err != nil {
		return nil, err
	}
	adapter, err := backend.Open(ctx, cfg.Spec.StoreConfig(), creds)
	if err != nil {
		return nil, fmt.Errorf("open %s: %w", cfg.Spec.SourceURL(), err)
	}
	store := objstore.WithPrefix(adapter, cfg.Spec.Prefix)
	mark("store")
	if cfg.StandbyFD != 0 {
		// A standby: ready up to the cache, whose lock the serving
		// process holds until it dies.
		if err := awaitGoAhead(ctx, cfg.StandbyFD); err != nil {
			_ = store.Close()
			return nil, err
		}
		mark("go-ahead")
		rotation.catchUp(ctx, adapter) // credentials rotated while it waited
	}
	if !cfg.Resume && !cfg.NoBucketCheck {
		// A takeover or a remount heal serves pods that use the volume
		// already: a hiccup of the store must not fail them; a stage
		// refuses a bucket it cannot use.
		if err := checkBucket(ctx, store, cfg.Spec); err != nil {
			_ = store.Close()
			return nil, err
		}
	}
	rotation.watch(ctx, adapter) // switches the adapter's credentials
	if wrap != nil {
		store = wrap(store)
	}
	adm := newMountAdmin(cfg)
	store = adm.instrument(store)
	s := &mountSession{store: store, admin: adm}
	s.tier, s.tierStore = openTier(ctx, cfg)
	copts := cfg.Cache
	copts.Tier = s.tier
	if s.cache, err = cache.Open(ctx, cfg.CacheDir, store, copts); err != nil {
		s.close()
		return nil, fmt.Errorf("open cache %s: %w", cfg.CacheDir, err)
	}
	mark("cache")
	fsys, err := fuse.New(cfg.FS, store, s.cache)
	if err != nil {
		s.close()
		return nil, err
	}
	s.admin.serve(s.cache, fsys) // before the mount answers: served means inspectable
	if s.mounted, err = fsys.Mount(ctx, cfg.Mountpoint, cfg.Mount); err != nil {
		s.close()
		return nil, err
	}
	mark("mounted") // INIT answered (a resume: replayed), serving
	return s, nil
}

// openTier opens the shared cache tier of cfg, or returns nils without
// one. A tier that cannot be opened is logged and left out: the volume
// serves from the origin (fail-open). Its credentials are the hand-off
// file's or a newer rotation; SIGHUP switches to the next
// (credentials_rotate.go), until ctx ends.
func openTier(ctx context.Context, cfg mountConfig) (*tier.Tier, objstore.Store) {
	tcfg, prefix, ok := cfg.Spec.SharedCacheConfig()
	if !ok {
		return nil, nil
	}
	creds, rotation, err := startSharedCacheCredentials(cfg)
	if err != nil {
		klog.ErrorS(err, "shared cache tier unusable; reading from the origin only", "volume", cfg.VolumeID, "sharedCache", cfg.Spec.SharedCache)
		return nil, nil
	}
	st, err := backend.Open(ctx, tcfg, creds)
	if err != nil {
		klog.ErrorS(err, "shared cache tier unusable; reading from the origin only", "volume", cfg.VolumeID, "sharedCache", cfg.Spec.SharedCache)
		return nil, nil
	}
	rotation.watch(ctx, st) // switches the tier adapter's credentials
	st = objstore.WithPrefix(st, prefix)
	klog.InfoS("shared cache tier", "volume", cfg.VolumeID, "sharedCache", cfg.Spec.SharedCache)
	return tier.New(st, tier.Options{VolumeID: cfg.VolumeID, OpTimeout: tcfg.RequestTimeout}), st
}

// close unmounts (if still mounted) and closes the cache and the store.
func (s *mountSession) close() {
	s.admin.close()
	if s.mounted != nil {
		if err := s.mounted.Unmount(); err != nil { // idempotent
			klog.ErrorS(err, "unmount")
		}
	}
	if s.cache != nil {
		if err := s.cache.Close(); err != nil {
			klog.ErrorS(err, "close cache", "dir", s.cache.Dir())
		}
	}
	if s.tier != nil {
		s.tier.Close()
		_ = s.tierStore.Close()
	}
	_ = s.store.Close()
}

package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"

	"k8s.io/klog/v2"

	"github.com/basin-csi/basin/pkg/cache"
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
		return fmt.Errorf("%w\n(see csi-driver mount --help)", err)
	}
	if cfg.Debug {
		var kf flag.FlagSet
		klog.InitFlags(&kf)
		_ = kf.Set("v", "4")
	}
	return serveMount(ctx, cfg)
}

// serveMount runs one mount described by a validated config.
func serveMount(ctx context.Context, cfg mountConfig) error {
	store, err := backend.Open(ctx, cfg.Store, objstore.Credentials{})
	if err != nil {
		return fmt.Errorf("open %s: %w", cfg.Source, err)
	}
	store = objstore.WithPrefix(store, cfg.Source.Prefix)
	defer store.Close()

	c, err := cache.Open(ctx, cfg.CacheDir, store, cfg.Cache)
	if err != nil {
		return fmt.Errorf("open cache %s: %w", cfg.CacheDir, err)
	}
	defer func() {
		if err := c.Close(); err != nil {
			klog.ErrorS(err, "close cache", "volume", cfg.Cache.VolumeID)
		}
	}()

	fsys, err := fuse.New(cfg.FS, store, c)
	if err != nil {
		return err
	}
	m, err := fsys.Mount(ctx, cfg.Mountpoint, cfg.Mount)
	if err != nil {
		return err
	}
	klog.InfoS("serving", "volume", cfg.Cache.VolumeID, "source", cfg.Source.String(),
		"mountpoint", cfg.Mountpoint, "cacheDir", cfg.CacheDir)
	select {
	case <-ctx.Done():
		klog.InfoS("signal received, unmounting", "volume", cfg.Cache.VolumeID, "mountpoint", cfg.Mountpoint)
		return m.Unmount()
	case <-m.Done():
		klog.InfoS("mount went away", "volume", cfg.Cache.VolumeID, "mountpoint", cfg.Mountpoint)
		return nil
	}
}

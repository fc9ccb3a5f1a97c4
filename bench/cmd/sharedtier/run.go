package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/basin-csi/basin/bench/dataset"
	"github.com/basin-csi/basin/bench/servers"
	"github.com/basin-csi/basin/bench/sut"
	"github.com/basin-csi/basin/bench/wanproxy"
	"github.com/basin-csi/basin/pkg/objstore"
	"golang.org/x/sys/unix"
)

const (
	originBucket = "basin-sharedtier"
	tierBucket   = "basin-tier"
)

// rig is the servers of a run.
type rig struct {
	origin, tier *servers.Server
	proxy        *wanproxy.Proxy
	env          sut.Env
	tierURL      string
	unmounts     []func()
}

func run(ctx context.Context, args []string) error {
	cfg, err := parseFlags(args)
	if err != nil {
		return err
	}
	bin := sut.FindBinary(cfg.minio, cfg.tools)
	if bin == "" {
		return fmt.Errorf("minio not found in %s or $PATH (hack/install-tools.sh)", cfg.tools)
	}
	r, err := startRig(ctx, cfg, bin)
	if err != nil {
		return err
	}
	defer r.close()

	rep := &report{cfg: cfg}
	for _, set := range []dataset.Set{cfg.small, cfg.ckpt} {
		threads := cfg.threads
		if set.Layout == dataset.LayoutFlat {
			threads = 1 // a checkpoint is read shard after shard
		}
		for i := 1; i <= 3; i++ {
			n := r.node(cfg, fmt.Sprintf("node%d", i), true)
			row, err := epoch(ctx, cfg, r, n, set, threads, nil)
			if err != nil {
				return fmt.Errorf("%s, %s: %w", set.Name, n.Name(), err)
			}
			rep.add(set, row)
		}
		n := r.node(cfg, "notier", false)
		row, err := epoch(ctx, cfg, r, n, set, threads, nil)
		if err != nil {
			return fmt.Errorf("%s, without the tier: %w", set.Name, err)
		}
		rep.add(set, row)
	}
	// The tier's server dies halfway through an epoch over a filled tier.
	// Directory prefetch is off on this node: with it, the tier would
	// have handed over the whole set before the kill.
	n := r.node(cfg, "tierkilled", true, "--prefetch=false")
	row, err := epoch(ctx, cfg, r, n, cfg.small, cfg.threads, func() { r.tier.Kill() })
	if err != nil {
		return fmt.Errorf("%s, tier killed: %w", cfg.small.Name, err)
	}
	rep.add(cfg.small, row)
	path, err := rep.write()
	if err != nil {
		return err
	}
	fmt.Println(path)
	return nil
}

// startRig starts the origin behind the WAN emulator, with the data sets
// written, and an empty tier on loopback.
func startRig(ctx context.Context, cfg config, bin string) (*rig, error) {
	r := &rig{}
	// Both servers keep their data in a tmpfs: dropping the page cache
	// before an epoch empties the nodes' caches, not the servers' (a
	// remote bucket's or a tier server's disks are not this machine's).
	room := cfg.small.TotalBytes() + cfg.ckpt.TotalBytes() + 1<<30
	originDir, tierDir := filepath.Join(cfg.work, "origin"), filepath.Join(cfg.work, "tier")
	for _, d := range []string{originDir, tierDir} {
		unmount, err := mountTmpfs(d, room)
		if err != nil {
			r.close()
			return nil, err
		}
		r.unmounts = append(r.unmounts, unmount)
	}
	var err error
	if r.origin, err = servers.StartMinIO(ctx, bin, originDir); err != nil {
		r.close()
		return nil, err
	}
	if r.tier, err = servers.StartMinIO(ctx, bin, tierDir); err != nil {
		r.close()
		return nil, err
	}
	pc := cfg.proxy
	pc.Upstream = r.origin.Endpoint
	if r.proxy, err = wanproxy.Start(pc, "127.0.0.1:0"); err != nil {
		r.close()
		return nil, err
	}
	creds := objstore.Credentials{AccessKeyID: servers.MinIOAccessKey, SecretAccessKey: servers.MinIOSecretKey}
	oc := objstore.Config{Backend: objstore.BackendS3, Bucket: originBucket, Endpoint: r.origin.Endpoint,
		Region: servers.MinIORegion, PathStyle: true}
	origin, err := servers.OpenBucket(ctx, oc, creds)
	if err != nil {
		r.close()
		return nil, err
	}
	defer func() { _ = origin.Close() }()
	sink := dataset.StoreSink{Store: origin, Name: "s3://" + originBucket}
	for _, set := range []dataset.Set{cfg.small, cfg.ckpt} {
		if !dataset.Present(ctx, sink, set) {
			fmt.Printf("writing %s: %d × %d KiB\n", set.Name, set.Files, set.FileSize>>10)
			if _, err := dataset.Write(ctx, sink, set, 16, nil); err != nil {
				r.close()
				return nil, err
			}
		}
	}
	tc := oc
	tc.Bucket, tc.Endpoint = tierBucket, r.tier.Endpoint
	tier, err := servers.OpenBucket(ctx, tc, creds)
	if err != nil {
		r.close()
		return nil, err
	}
	_ = tier.Close()
	r.tierURL = r.tier.Endpoint + "/" + tierBucket
	r.env = sut.Env{WorkDir: filepath.Join(cfg.work, "nodes"), ToolsBin: cfg.tools,
		S3: sut.S3Target{Endpoint: r.proxy.URL(), Bucket: originBucket, Region: servers.MinIORegion,
			AccessKey: servers.MinIOAccessKey, SecretKey: servers.MinIOSecretKey}}
	return r, nil
}

// node is one Basin mount with its own cache directory, with or without
// the tier. The tier's credentials are the default chain's: the same
// AWS_* variables as the origin's (both servers have the same root key).
func (r *rig) node(cfg config, name string, tiered bool, extra ...string) sut.System {
	if tiered {
		extra = append(extra, "--shared-cache", r.tierURL)
	}
	return sut.NewBasinNamed(r.env, name, cfg.basin, extra...)
}

func (r *rig) close() {
	if r.proxy != nil {
		_ = r.proxy.Close()
	}
	if r.tier != nil {
		r.tier.Stop()
	}
	if r.origin != nil {
		r.origin.Stop()
	}
	for _, u := range r.unmounts {
		u()
	}
}

// mountTmpfs mounts a tmpfs of size bytes at dir.
func mountTmpfs(dir string, size int64) (unmount func(), err error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	if err := unix.Mount("tmpfs", dir, "tmpfs", 0, fmt.Sprintf("size=%d,mode=0700", size)); err != nil {
		return nil, fmt.Errorf("tmpfs for a server's data at %s: %w", dir, err)
	}
	return func() { _ = unix.Unmount(dir, 0) }, nil
}

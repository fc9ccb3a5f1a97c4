package main

import (
	"context"
	"fmt"
	"path/filepath"

	"github.com/basin-csi/basin/bench/dataset"
	"github.com/basin-csi/basin/bench/epoch"
	"github.com/basin-csi/basin/bench/servers"
	"github.com/basin-csi/basin/bench/sut"
	"github.com/basin-csi/basin/bench/wanproxy"
)

const (
	originBucket = "basin-sharedtier"
	tierBucket   = "basin-tier"
)

// rig is the servers of a run.
type rig struct {
	origin      *epoch.Origin
	proxy       *wanproxy.Proxy // origin's
	tier        *servers.Server
	env         sut.Env
	tierURL     string
	unmountTier func()
}

func run(ctx context.Context, args []string) error {
	cfg, err := parseFlags(args)
	if err != nil {
		return err
	}
	r, err := startRig(ctx, cfg)
	if err != nil {
		return err
	}
	defer r.close()

	rep := &report{cfg: cfg}
	for _, set := range []dataset.Set{cfg.Small, cfg.Ckpt} {
		threads := epoch.Threads(set, cfg.Threads)
		for i := 1; i <= 3; i++ {
			n := r.node(cfg, fmt.Sprintf("node%d", i), true)
			row, err := coldEpoch(ctx, cfg, r, n, set, threads, nil)
			if err != nil {
				return fmt.Errorf("%s, %s: %w", set.Name, n.Name(), err)
			}
			rep.add(set, row)
		}
		n := r.node(cfg, "notier", false)
		row, err := coldEpoch(ctx, cfg, r, n, set, threads, nil)
		if err != nil {
			return fmt.Errorf("%s, without the tier: %w", set.Name, err)
		}
		rep.add(set, row)
	}
	// The tier's server dies halfway through an epoch over a filled tier.
	// Directory prefetch is off on this node: with it, the tier would
	// have handed over the whole set before the kill.
	n := r.node(cfg, "tierkilled", true, "--prefetch=false")
	row, err := coldEpoch(ctx, cfg, r, n, cfg.Small, cfg.Threads, func() { r.tier.Kill() })
	if err != nil {
		return fmt.Errorf("%s, tier killed: %w", cfg.Small.Name, err)
	}
	rep.add(cfg.Small, row)
	path, err := rep.write()
	if err != nil {
		return err
	}
	fmt.Println(path)
	return nil
}

// startRig starts the origin behind the WAN emulator, with the data sets
// written, and an empty tier on loopback, its data in a tmpfs too.
func startRig(ctx context.Context, cfg config) (*rig, error) {
	r := &rig{}
	var err error
	r.origin, err = epoch.StartOrigin(ctx, epoch.OriginConfig{MinIO: cfg.MinIO, Dir: filepath.Join(cfg.Work, "origin"),
		Bucket: originBucket, Sets: []dataset.Set{cfg.Small, cfg.Ckpt}, Proxy: cfg.Proxy,
		Work: filepath.Join(cfg.Work, "nodes"), Tools: cfg.Tools})
	if err != nil {
		return nil, err
	}
	r.proxy, r.env = r.origin.Proxy, r.origin.Env
	tierDir := filepath.Join(cfg.Work, "tier")
	unmount, err := epoch.MountTmpfs(tierDir, cfg.Small.TotalBytes()+cfg.Ckpt.TotalBytes()+1<<30)
	if err != nil {
		r.close()
		return nil, err
	}
	r.unmountTier = unmount
	if r.tier, err = servers.StartMinIO(ctx, cfg.MinIO, tierDir); err != nil {
		r.close()
		return nil, err
	}
	tc := r.origin.Config
	tc.Bucket, tc.Endpoint = tierBucket, r.tier.Endpoint
	tier, err := servers.OpenBucket(ctx, tc, r.origin.Creds)
	if err != nil {
		r.close()
		return nil, err
	}
	_ = tier.Close()
	r.tierURL = r.tier.Endpoint + "/" + tierBucket
	return r, nil
}

// node is one Basin mount with its own cache directory, with or without
// the tier. The tier's credentials are the default chain's: the same
// AWS_* variables as the origin's (both servers have the same root key).
func (r *rig) node(cfg config, name string, tiered bool, extra ...string) sut.System {
	if tiered {
		extra = append(extra, "--shared-cache", r.tierURL)
	}
	return sut.NewBasinNamed(r.env, name, cfg.Basin, extra...)
}

func (r *rig) close() {
	if r.tier != nil {
		r.tier.Stop()
	}
	if r.unmountTier != nil {
		r.unmountTier()
	}
	r.origin.Close()
}

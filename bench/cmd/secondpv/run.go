package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"

	"github.com/basin-csi/basin/bench/dataset"
	"github.com/basin-csi/basin/bench/epoch"
	"github.com/basin-csi/basin/bench/sut"
	"github.com/basin-csi/basin/pkg/supervisor"
)

const originBucket = "basin-secondpv"

func run(ctx context.Context, args []string) error {
	cfg, err := parseFlags(args)
	if err != nil {
		return err
	}
	rep := &report{cfg: cfg, loadBefore: sut.LoadAverage()}
	o, err := epoch.StartOrigin(ctx, epoch.OriginConfig{MinIO: cfg.MinIO, Dir: filepath.Join(cfg.Work, "origin"),
		Bucket: originBucket, Sets: []dataset.Set{cfg.Small, cfg.Ckpt}, Proxy: cfg.Proxy,
		Work: filepath.Join(cfg.Work, "node"), Tools: cfg.Tools})
	if err != nil {
		return err
	}
	defer o.Close()
	for _, set := range []dataset.Set{cfg.Small, cfg.Ckpt} {
		p := &player{cfg: cfg, proxy: o.Proxy, set: set, threads: epoch.Threads(set, cfg.Threads)}
		rows, err := p.play(ctx, o.Env)
		rep.add(set, rows)
		if err != nil {
			return fmt.Errorf("%s: %w", set.Name, err)
		}
	}
	rep.loadAfter = sut.LoadAverage()
	path, err := rep.write()
	if err != nil {
		return err
	}
	fmt.Println(path)
	return nil
}

// step is one epoch of a round.
type step struct {
	what    what
	dropped bool
}

// play measures PV1's cold epoch, the rounds of design B and PV1's warm
// epochs, then the rounds of design A, and returns the rows played (also
// those before an error).
func (p *player) play(ctx context.Context, env sut.Env) ([]row, error) {
	var rows []row
	// PV1 and, in design A, PV2's own process: the same flags and cache
	// directory, one process at a time (the cache's index is locked by
	// the process that has it open).
	pv1 := sut.NewBasinNamed(env, "pv1", p.cfg.Basin, "--read-only")
	if err := pv1.DropCache(); err != nil {
		return rows, err
	}
	mnt, err := pv1.Mount(ctx)
	if err != nil {
		return rows, err
	}
	defer func() { _ = pv1.Unmount(context.WithoutCancel(ctx)) }()
	r, err := p.measure(ctx, pv1Cold, 0, true, pv1.PID(), mnt, false)
	rows = append(rows, r)
	if err != nil {
		return rows, err
	}

	// Design B: PV2's published target is what the node plugin makes of it, a
	// read-only bind of the share's directory for PV2's prefix (here the
	// data set's directory, nested in PV1's whole bucket).
	kernel := supervisor.NewLinuxKernel(nil)
	target := filepath.Join(p.cfg.Work, "pv2-target")
	if err := os.MkdirAll(target, 0o750); err != nil {
		return rows, err
	}
	if err := kernel.Bind(ctx, filepath.Join(mnt, p.set.Name), target, true); err != nil {
		return rows, err
	}
	defer func() { _ = kernel.Unmount(context.WithoutCancel(ctx), target) }()
	// The first epoch is PV2's with the page cache as PV1's cold epoch
	// left it: a second team's pod on a node where the first one runs.
	order := []step{{pv2B, false}, {pv1Warm, false}, {pv2B, true}, {pv1Warm, true}}
	for round := 1; round <= p.cfg.rounds; round++ {
		for _, s := range order {
			root, inSetDir := mnt, false
			if s.what == pv2B {
				root, inSetDir = target, true
			}
			r, err := p.measure(ctx, s.what, round, s.dropped, pv1.PID(), root, inSetDir)
			rows = append(rows, r)
			if err != nil {
				return rows, err
			}
		}
		slices.Reverse(order) // what comes first in a round does not always come first
	}
	if err := kernel.Unmount(ctx, target); err != nil {
		return rows, err
	}
	if err := pv1.Unmount(ctx); err != nil {
		return rows, err
	}

	// Design A: a process of PV2's own over the cache PV1 filled; its
	// inodes and its own memory start cold. Each epoch is a new process.
	drops := []bool{true, false}
	for round := 1; round <= p.cfg.rounds; round++ {
		for _, drop := range drops {
			mnt, err := pv1.Mount(ctx)
			if err != nil {
				return rows, err
			}
			r, err := p.measure(ctx, pv2A, round, drop, pv1.PID(), mnt, false)
			rows = append(rows, r)
			if err != nil {
				return rows, err
			}
			if err := pv1.Unmount(ctx); err != nil {
				return rows, err
			}
		}
		slices.Reverse(drops)
	}
	return rows, nil
}

package driver

import (
	"context"
	"path/filepath"
	"time"

	"k8s.io/klog/v2"

	"github.com/basin-csi/basin/pkg/driver/volumeattr"
	"github.com/basin-csi/basin/pkg/warmup"
)

// The warmup volume attribute: after NodeStageVolume succeeded, the node
// plugin reads the listed paths of the staging mount in the background
// (pkg/warmup), so the node's cache holds them before the workload asks.
// It is logged and never fails the stage. It stops when the volume is
// unstaged (or the node plugin exits); it keeps no state file: the next
// stage warms again, reading what is still cached locally.
const (
	warmupThreads       = 8
	warmupLogInterval   = 30 * time.Second
	warmupStagedPoll    = 2 * time.Second
	warmupLoggedFailure = 5
)

// startWarmup warms paths (volumeattr.Attributes.Warmup) of a volume
// staged at staging, in the background.
func (n *Node) startWarmup(id, staging string, paths []string) {
	if len(paths) == 0 {
		return
	}
	targets := make([]string, len(paths))
	for i, p := range paths {
		if p == volumeattr.WarmupAll {
			p = ""
		}
		targets[i] = filepath.Join(staging, p) // the parser keeps every path inside
	}
	ctx, cancel := context.WithCancel(context.Background())
	go func() { // stop once the volume is no longer staged here
		defer cancel()
		t := time.NewTicker(warmupStagedPoll)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
				if v, ok := n.state.Get(id); !ok || v.StagingPath != staging {
					return
				}
			}
		}
	}()
	go func() {
		defer cancel()
		klog.InfoS("warmup started", "volume", id, "paths", paths)
		res, err := warmup.Run(ctx, targets, warmup.Options{
			Threads:          warmupThreads,
			ProgressInterval: warmupLogInterval,
			Progress: func(p warmup.Progress) {
				if !p.Done {
					klog.InfoS("warmup progress", "volume", id, "progress", p.Line())
				}
			},
		})
		for i, f := range res.Failures {
			if i == warmupLoggedFailure {
				break
			}
			klog.ErrorS(f.Err, "warmup could not read", "volume", id, "path", f.Path)
		}
		kv := []any{"volume", id, "files", res.Files, "bytes", res.Bytes, "errors", res.Errors,
			"elapsed", res.Elapsed.Round(time.Second), "cacheFits", res.Cache.Fits, "cache", res.Cache.Verdict}
		if err != nil {
			klog.InfoS("warmup stopped", append(kv, "reason", err.Error())...)
			return
		}
		klog.InfoS("warmup finished", kv...)
	}()
}

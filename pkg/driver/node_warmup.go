package driver

import (
	"context"
	"path/filepath"
	"slices"
	"time"

	"k8s.io/klog/v2"

	"github.com/basin-csi/basin/pkg/driver/volumeattr"
	"github.com/basin-csi/basin/pkg/warmup"
)

// The node plugin's glue to the warmup engine (pkg/warmup); nothing else
// in this package imports it. The warmup volume attribute: after
// NodeStageVolume succeeded, the node plugin reads the listed paths of
// the staging mount in the background, so the node's cache holds them
// before the workload asks. It is logged and never fails the stage. NodeUnstageVolume of the volume
// and Node.Close cancel it and wait for it to stop (up to the operation
// timeout: a read blocked on a hung mount cannot be interrupted). It keeps
// no state file: the next stage warms again, reading what is still cached
// locally.
const (
	warmupThreads       = 8
	warmupLogInterval   = 30 * time.Second
	warmupLoggedFailure = 5
)

// warmupRun is a running warmup.
type warmupRun struct {
	cancel context.CancelFunc
	done   chan struct{} // closed when it stopped
}

// startWarmup warms paths (volumeattr.Attributes.Warmup) of a volume
// staged at staging, in the background, unless a warmup of the volume
// runs already.
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
	ctx, cancel := context.WithCancel(n.life)
	w := &warmupRun{cancel: cancel, done: make(chan struct{})}
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.warmups[id] != nil || n.life.Err() != nil { // running, or the node closes
		cancel()
		return
	}
	n.warmups[id] = w
	// Under mu: Close ends life under mu before it waits for background.
	n.background.Go(func() {
		defer func() {
			cancel()
			n.mu.Lock()
			if n.warmups[id] == w {
				delete(n.warmups, id)
			}
			n.mu.Unlock()
			close(w.done)
		}()
		res, err := warm(ctx, id, targets, paths)
		if err == nil && slices.Contains(paths, volumeattr.WarmupAll) {
			n.recordDataset(id, res)
		}
	})
}

// stopWarmup cancels the warmup of volume id, if one runs, and waits until
// it stopped, bounded by ctx and the operation timeout.
func (n *Node) stopWarmup(ctx context.Context, id string) {
	n.mu.Lock()
	w := n.warmups[id]
	n.mu.Unlock()
	if w == nil {
		return
	}
	w.cancel()
	ctx, cancel := n.opContext(ctx)
	defer cancel()
	select {
	case <-w.done:
	case <-ctx.Done():
		klog.InfoS("warmup still stopping", "volume", id, "reason", ctx.Err())
	}
}

// warm runs one warmup and logs its outcome.
func warm(ctx context.Context, id string, targets, paths []string) (warmup.Result, error) {
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
		return res, err
	}
	klog.InfoS("warmup finished", kv...)
	return res, nil
}

// Dataset is the size of a whole volume, as the last complete warmup of
// all of it (the warmup attribute "/") found it on this node. The node
// plugin knows no other way to learn it (it never lists a whole bucket
// otherwise); it is kept in memory, so a restarted plugin knows it again
// after the volume's next stage.
type Dataset struct {
	Bytes, Objects int64
}

// recordDataset keeps what a warmup of the whole volume found, if it
// walked and read everything, and tells NodeConfig.VolumesChanged.
func (n *Node) recordDataset(id string, res warmup.Result) {
	if !res.WalkDone || res.Errors > 0 || res.MetadataOnly {
		return
	}
	n.mu.Lock()
	n.datasets[id] = Dataset{Bytes: res.FoundBytes, Objects: res.FoundFiles}
	n.mu.Unlock()
	n.volumesChanged()
}

// Dataset returns the size of volume id, if a warmup of all of it ran
// since the plugin started.
func (n *Node) Dataset(id string) (Dataset, bool) {
	n.mu.Lock()
	defer n.mu.Unlock()
	d, ok := n.datasets[id]
	return d, ok
}

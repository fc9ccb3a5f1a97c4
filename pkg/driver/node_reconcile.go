package driver

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"sync"
	"time"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"k8s.io/klog/v2"

	"github.com/basin-csi/basin/pkg/driver/nodestate"
	"github.com/basin-csi/basin/pkg/driver/volumeattr"
)

// Start-up reconcile. A restarted node plugin takes back the volumes of
// the node state in the background, ReconcileWorkers at a time, while it
// already serves:
//   - Probe answers ready=false until every volume was handled.
//   - Calls that change a volume (stage, unstage, publish, unpublish) and
//     NodeGetVolumeStats wait until that volume was handled, bounded by
//     their context; a call whose context ends first fails with Aborted
//     (operation pending for the volume: the CO retries).
//   - NodeGetVolumeHealth answers at once: DEGRADED, TakingBack.
//   - Calls for other volumes are served as usual.

// startReconcile marks every volume of the node state pending, then takes
// them back in the background. Called once, before serving.
func (n *Node) startReconcile() {
	vols := n.state.List()
	if len(vols) == 0 {
		close(n.reconciled) // ready at once
		return
	}
	n.mu.Lock()
	for _, v := range vols {
		n.pending[v.ID] = make(chan struct{})
	}
	n.mu.Unlock()
	n.background.Go(func() {
		defer close(n.reconciled)
		n.reconcile(n.life, vols)
	})
}

// reconcile takes back vols with at most ReconcileWorkers at once.
func (n *Node) reconcile(ctx context.Context, vols []nodestate.Volume) {
	start := time.Now()
	todo := make(chan nodestate.Volume)
	var wg sync.WaitGroup
	for range min(n.cfg.ReconcileWorkers, len(vols)) {
		wg.Go(func() {
			for v := range todo {
				if ctx.Err() == nil { // else the node closes: leave it to the next plugin
					n.takeBack(ctx, v)
				}
				n.takenBack(v.ID)
			}
		})
	}
	for _, v := range vols {
		todo <- v
	}
	close(todo)
	wg.Wait()
	klog.InfoS("start-up reconcile finished", "volumes", len(vols), "elapsed", time.Since(start).Round(time.Millisecond),
		"stopped", ctx.Err() != nil)
}

// takeBack takes back one volume of the node state after a restart: an
// entry whose staging directory is gone is dropped (and targets whose
// directory is gone), any other volume is mounted again, its FUSE process
// started (a process left by the previous node plugin is stopped first)
// and its targets re-bound. A volume that cannot be taken back is logged
// and kept: NodeGetVolumeHealth reports it, and NodeUnstageVolume still
// cleans it up. A ctx that ends stops it.
func (n *Node) takeBack(ctx context.Context, v nodestate.Volume) {
	if n.gone(ctx, v.StagingPath) {
		klog.InfoS("dropping a volume whose staging path is gone", "volume", v.ID, "staging", v.StagingPath)
		n.forget(v.ID)
		// Nothing to unmount; a connection still held for it is released.
		if err := n.mounter.Unstage(ctx, v.ID, ""); err != nil {
			klog.ErrorS(err, "releasing a forgotten volume", "volume", v.ID)
		}
		return
	}
	for target := range v.Targets {
		if n.gone(ctx, target) {
			klog.InfoS("dropping a target that is gone", "volume", v.ID, "target", target)
			n.dropTarget(v.ID, target)
		}
	}
	if !v.MountRecorded {
		klog.V(2).InfoS("volume staged by an older release, which recorded no mount flags or volume mount group: "+
			"its publications' flags and group are not checked until it is unstaged", "volume", v.ID)
	}
	if err := n.restage(ctx, v); err != nil {
		klog.ErrorS(err, "could not take a staged volume back", "volume", v.ID, "staging", v.StagingPath)
		return
	}
	klog.InfoS("staged volume taken back", "volume", v.ID, "staging", v.StagingPath, "targets", len(v.Targets))
}

// takenBack ends the wait for volume id.
func (n *Node) takenBack(id string) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if ch := n.pending[id]; ch != nil {
		close(ch)
		delete(n.pending, id)
	}
}

// takingBack reports whether the start-up reconcile still has to take
// volume id back.
func (n *Node) takingBack(id string) bool {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.pending[id] != nil
}

// awaitTakenBack waits, bounded by ctx, until the start-up reconcile
// handled volume id (at once for any other volume).
func (n *Node) awaitTakenBack(ctx context.Context, id string) error {
	n.mu.Lock()
	ch := n.pending[id]
	n.mu.Unlock()
	if ch == nil {
		return nil
	}
	select {
	case <-ch:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("%w: volume %s is still being taken back after a node plugin restart (%v); retry later", ErrBusy, id, ctx.Err())
	}
}

// restage mounts a recorded volume again.
func (n *Node) restage(ctx context.Context, v nodestate.Volume) error {
	attrs, err := volumeattr.Parse(v.Context, nil)
	if err != nil {
		return err
	}
	creds, err := n.state.LoadCredentials(v.ID)
	if err != nil {
		return err
	}
	tierCreds, err := n.state.LoadCredentials(sharedCacheCredentialsID(v.ID))
	if err != nil {
		return err
	}
	mode := csi.VolumeCapability_AccessMode_Mode(csi.VolumeCapability_AccessMode_Mode_value[v.AccessMode])
	spec, err := mountSpec(attrs, readerMode(mode), v.MountFlags, v.MountGroup)
	if err != nil {
		return err
	}
	req := n.mountRequest(v.ID, v.StagingPath, spec, creds)
	req.SharedCacheCredentials = tierCreds
	return n.stage(ctx, req)
}

// gone reports whether path no longer exists. A mount point is not gone,
// and is not asked: its FUSE process may be dead, waiting to be taken
// over. A path on a hung mount that does not answer within the operation
// timeout is not gone.
func (n *Node) gone(ctx context.Context, path string) bool {
	ctx, cancel := context.WithTimeout(ctx, n.cfg.OpTimeout)
	defer cancel()
	if _, err := n.kernel.MountDev(ctx, path); err == nil {
		return false
	}
	_, err := n.statWithin(ctx, path, os.Lstat) // a timeout is no ErrNotExist
	return errors.Is(err, fs.ErrNotExist)
}

package driver

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"time"

	"k8s.io/klog/v2"

	"github.com/basin-csi/basin/pkg/driver/nodestate"
	"github.com/basin-csi/basin/pkg/driver/volumeattr"
)

// reconcile takes back the volumes of the node state after a restart:
// entries whose staging directory is gone are dropped (and targets whose
// directory is gone), every other volume is mounted again, its FUSE
// process started (a process left by the previous node plugin is stopped
// first) and its targets re-bound. A volume that cannot be taken back is
// logged and kept: NodeGetVolumeStats reports it abnormal, and
// NodeUnstageVolume still cleans it up.
func (n *Node) reconcile(ctx context.Context) {
	for _, v := range n.state.List() {
		if n.gone(ctx, v.StagingPath) {
			klog.InfoS("dropping a volume whose staging path is gone", "volume", v.ID, "staging", v.StagingPath)
			n.forget(v.ID)
			// Nothing to unmount; a connection still held for it is released.
			if err := n.mounter.Unstage(ctx, v.ID, ""); err != nil {
				klog.ErrorS(err, "releasing a forgotten volume", "volume", v.ID)
			}
			continue
		}
		for target := range v.Targets {
			if n.gone(ctx, target) {
				klog.InfoS("dropping a target that is gone", "volume", v.ID, "target", target)
				n.dropTarget(v.ID, target)
			}
		}
		if err := n.restage(ctx, v); err != nil {
			klog.ErrorS(err, "could not take a staged volume back", "volume", v.ID, "staging", v.StagingPath)
			continue
		}
		klog.InfoS("staged volume taken back", "volume", v.ID, "staging", v.StagingPath, "targets", len(v.Targets))
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
	mode := v.AccessMode
	ro := mode == "SINGLE_NODE_READER_ONLY" || mode == "MULTI_NODE_READER_ONLY"
	return n.mounter.Stage(ctx, n.mountRequest(v.ID, v.StagingPath, attrs, ro, creds))
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
	done := make(chan error, 1)
	go func() { _, err := os.Lstat(path); done <- err }() // may block on a hung FUSE mount
	select {
	case err := <-done:
		return errors.Is(err, fs.ErrNotExist)
	case <-ctx.Done():
		return false
	case <-time.After(n.cfg.OpTimeout):
		return false
	}
}

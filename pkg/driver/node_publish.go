package driver

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"slices"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"k8s.io/klog/v2"

	"github.com/basin-csi/basin/pkg/driver/nodestate"
	"github.com/basin-csi/basin/pkg/driver/volumeattr"
)

// NodePublishVolume bind-mounts the staging path (a shared volume: its
// share's directory, publishSource) on the pod's target,
// read-only when the request, the access mode or the volume says so.
func (n *Node) NodePublishVolume(ctx context.Context, req *csi.NodePublishVolumeRequest) (*csi.NodePublishVolumeResponse, error) {
	if err := n.publishVolume(ctx, req); err != nil {
		return nil, redact(toStatus(err), secretValues(req.GetSecrets()))
	}
	return &csi.NodePublishVolumeResponse{}, nil
}

func (n *Node) publishVolume(ctx context.Context, req *csi.NodePublishVolumeRequest) error {
	id, target, staging, vc := req.GetVolumeId(), req.GetTargetPath(), req.GetStagingTargetPath(), req.GetVolumeCapability()
	switch {
	case id == "":
		return fmt.Errorf("%w: volume ID missing", ErrInvalidRequest)
	case target == "":
		return fmt.Errorf("%w: target path missing", ErrInvalidRequest)
	case staging == "":
		return fmt.Errorf("%w: staging target path missing (the driver stages volumes)", ErrInvalidRequest)
	case vc == nil:
		return fmt.Errorf("%w: volume capability missing", ErrInvalidRequest)
	}
	release, err := n.begin(ctx, id)
	if err != nil {
		return err
	}
	defer release()
	v, ok := n.state.Get(id)
	switch {
	case !ok:
		return fmt.Errorf("%w: volume %s is not staged on this node", ErrPrecondition, id)
	case v.StagingPath != staging:
		return fmt.Errorf("%w: volume %s is staged at %s, not %s", ErrPrecondition, id, v.StagingPath, staging)
	}
	attrs, err := volumeattr.Parse(v.Context, nil)
	if err != nil {
		return err
	}
	if err := checkCapability(vc, attrs.ReadOnly); err != nil {
		return fmt.Errorf("%w: %w", ErrInvalidRequest, err)
	}
	if err := checkPublishMount(v, vc.GetMount()); err != nil {
		return err
	}
	creds, err := publishCredentials(req.GetSecrets(), attrs.Backend)
	if err != nil {
		return err
	}
	n.rotateCredentials(ctx, id, creds) // requiresRepublish delivers rotated secrets here (node_rotate.go)
	mode := vc.GetAccessMode().GetMode()
	ro := req.GetReadonly() || readerMode(mode) || attrs.ReadOnly
	if mode == csi.VolumeCapability_AccessMode_SINGLE_NODE_SINGLE_WRITER {
		for other := range v.Targets {
			if other != target {
				return fmt.Errorf("%w: volume %s is ReadWriteOncePod and already published at %s", ErrPrecondition, id, other)
			}
		}
	}
	if t, ok := v.Targets[target]; ok {
		if t.ReadOnly != ro {
			return fmt.Errorf("%w: volume %s is already published at %s with readOnly=%v", ErrNameConflict, id, target, t.ReadOnly)
		}
		cctx, cancel := n.opContext(ctx)
		err := n.kernel.Check(cctx, target)
		cancel()
		if err == nil {
			return nil // a repeated call
		}
	}
	if err := os.MkdirAll(target, 0o750); err != nil {
		return fmt.Errorf("target path: %w", err)
	}
	// Record first, so a heal racing with this call re-binds the target.
	err = n.state.Update(id, func(v nodestate.Volume, ok bool) (nodestate.Volume, bool, error) {
		if v.Targets == nil {
			v.Targets = map[string]nodestate.Target{}
		}
		v.Targets[target] = nodestate.Target{ReadOnly: ro, AccessMode: mode.String()}
		return v, ok, nil
	})
	if err != nil {
		return err
	}
	bctx, cancel := n.opContext(ctx)
	defer cancel()
	if err := n.kernel.Bind(bctx, n.publishSource(id, staging), target, ro); err != nil {
		n.dropTarget(id, target)
		return err
	}
	klog.InfoS("volume published", "volume", id, "target", target, "readOnly", ro)
	return nil
}

// dropTarget removes a target from a volume's record.
func (n *Node) dropTarget(id, target string) {
	err := n.state.Update(id, func(v nodestate.Volume, ok bool) (nodestate.Volume, bool, error) {
		delete(v.Targets, target)
		return v, ok, nil
	})
	if err != nil {
		klog.ErrorS(err, "dropping a target from the node state", "volume", id, "target", target)
	}
}

// NodeUnpublishVolume unmounts the target (lazily if it is busy or its
// FUSE connection is broken) and removes the target directory. A target
// that is not mounted succeeds.
func (n *Node) NodeUnpublishVolume(ctx context.Context, req *csi.NodeUnpublishVolumeRequest) (*csi.NodeUnpublishVolumeResponse, error) {
	id, target := req.GetVolumeId(), req.GetTargetPath()
	switch {
	case id == "":
		return nil, toStatus(fmt.Errorf("%w: volume ID missing", ErrInvalidRequest))
	case target == "":
		return nil, toStatus(fmt.Errorf("%w: target path missing", ErrInvalidRequest))
	}
	release, err := n.begin(ctx, id)
	if err != nil {
		return nil, toStatus(err)
	}
	defer release()
	uctx, cancel := n.opContext(ctx)
	defer cancel()
	if err := n.kernel.Unmount(uctx, target); err != nil {
		return nil, toStatus(err)
	}
	if err := os.Remove(target); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, toStatus(fmt.Errorf("remove target path: %w", err))
	}
	if _, ok := n.state.Get(id); ok {
		n.dropTarget(id, target)
	}
	klog.InfoS("volume unpublished", "volume", id, "target", target)
	return &csi.NodeUnpublishVolumeResponse{}, nil
}

// checkPublishMount checks a publication's mount flags and volume mount
// group (checkCapability validated both) against the staged volume v: the
// FUSE mount, and so the options and the group, are the stage's, shared by
// every pod on the node. A volume staged by an older release recorded
// neither and is taken as staged (takeBack logs that once).
func checkPublishMount(v nodestate.Volume, m *csi.VolumeCapability_MountVolume) error {
	switch {
	case !v.MountRecorded:
		return nil
	case !slices.Equal(m.GetMountFlags(), v.MountFlags):
		return fmt.Errorf("%w: volume %s is staged with mount flags %q, not %q", ErrPrecondition, v.ID, v.MountFlags, m.GetMountFlags())
	case !sameGroup(v.MountGroup, m.GetVolumeMountGroup()):
		return groupConflict(v.ID, v.MountGroup, m.GetVolumeMountGroup())
	}
	return nil
}

package driver

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"slices"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"k8s.io/klog/v2"

	"github.com/basin-csi/basin/pkg/driver/nodestate"
	"github.com/basin-csi/basin/pkg/driver/volumeattr"
	"github.com/basin-csi/basin/pkg/objstore"
	"github.com/basin-csi/basin/pkg/supervisor"
)

// NodeStageVolume mounts the volume's FUSE file system on the staging path
// and starts its FUSE process (one per volume per node, shared by every
// pod), waiting until it serves, bounded by the request.
func (n *Node) NodeStageVolume(ctx context.Context, req *csi.NodeStageVolumeRequest) (*csi.NodeStageVolumeResponse, error) {
	if err := n.stageVolume(ctx, req); err != nil {
		return nil, redact(toStatus(err), secretValues(req.GetSecrets()))
	}
	n.volumesChanged()
	return &csi.NodeStageVolumeResponse{}, nil
}

func (n *Node) stageVolume(ctx context.Context, req *csi.NodeStageVolumeRequest) error {
	id, staging, vc := req.GetVolumeId(), req.GetStagingTargetPath(), req.GetVolumeCapability()
	switch {
	case id == "":
		return fmt.Errorf("%w: volume ID missing", ErrInvalidRequest)
	case staging == "":
		return fmt.Errorf("%w: staging target path missing", ErrInvalidRequest)
	case vc == nil:
		return fmt.Errorf("%w: volume capability missing", ErrInvalidRequest)
	}
	attrs, err := volumeattr.Parse(req.GetVolumeContext(), req.GetSecrets())
	if err != nil {
		return err
	}
	if err := attrs.CheckMountable(); err != nil {
		return err
	}
	if err := checkCapability(vc, attrs.ReadOnly); err != nil {
		return fmt.Errorf("%w: %w", ErrInvalidRequest, err)
	}
	release, err := n.begin(ctx, id)
	if err != nil {
		return err
	}
	defer release()

	mode := vc.GetAccessMode().GetMode()
	flags, group := vc.GetMount().GetMountFlags(), vc.GetMount().GetVolumeMountGroup()
	recorded := true // the record says which flags and group it is staged with
	shared := false  // decided below for a new stage, kept for a repeated one
	context := volumeattr.Encode(attrs)
	old, staged := n.state.Get(id)
	if staged {
		switch {
		case old.StagingPath != staging:
			return fmt.Errorf("%w: volume %s is already staged at %s", ErrPrecondition, id, old.StagingPath)
		case !maps.Equal(old.Context, context) || old.AccessMode != mode.String():
			return fmt.Errorf("%w: volume %s is already staged with other attributes or access mode", ErrNameConflict, id)
		case !old.MountRecorded:
			// Staged by an older release, which recorded no flags
			// or group: nothing to check them against.
		case !slices.Equal(old.MountFlags, flags):
			return fmt.Errorf("%w: volume %s is already staged with mount flags %q, not %q", ErrNameConflict, id, old.MountFlags, flags)
		case !sameGroup(old.MountGroup, group):
			return groupConflict(id, old.MountGroup, group)
		}
		// The volume stays as staged: a request without fsGroup, or one
		// for a volume of an older release, takes it as it is.
		flags, group, recorded, shared = old.MountFlags, old.MountGroup, old.MountRecorded, old.Shared
		if _, err := n.check(ctx, id); err == nil {
			n.rotateCredentials(ctx, id, attrs.Secrets) // a changed node-stage secret (node_rotate.go)
			return nil                                  // staged and supervised: a repeated call
		}
	}
	spec, err := mountSpec(attrs, readerMode(mode), flags, group)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(staging, 0o750); err != nil {
		return fmt.Errorf("staging path: %w", err)
	}
	if !staged {
		shared = shareable(spec)
	}
	mreq := n.mountRequest(id, staging, spec, attrs.Credentials())
	mreq.SharedCacheCredentials = attrs.SharedCacheCredentials()
	if !shared { // a share has a cache directory of its own
		if err := os.MkdirAll(mreq.CacheDir, 0o700); err != nil {
			return fmt.Errorf("cache directory: %w", err)
		}
	}
	// Record first: a node plugin that dies while mounting finds the
	// volume on restart and mounts it again (or drops it).
	if err := n.state.SaveCredentials(id, mreq.Credentials); err != nil {
		return err
	}
	if err := n.state.SaveCredentials(sharedCacheCredentialsID(id), mreq.SharedCacheCredentials); err != nil {
		return err
	}
	err = n.state.Update(id, func(v nodestate.Volume, ok bool) (nodestate.Volume, bool, error) {
		v.StagingPath, v.Context, v.AccessMode = staging, context, mode.String()
		v.MountFlags, v.MountGroup, v.MountRecorded, v.Shared = flags, group, recorded, shared
		return v, true, nil
	})
	if err != nil {
		return err
	}
	if err := n.stage(ctx, mreq); err != nil {
		if !staged {
			n.forget(id)
		}
		return stageError(err)
	}
	klog.InfoS("volume staged", "volume", id, "staging", staging, "source", spec.SourceURL(), "readOnly", spec.Flags().ReadOnly,
		"mountOptions", spec.MountOptions, "mountGroup", group, "cacheDir", mreq.CacheDir)
	n.startWarmup(id, n.publishSource(id, staging), attrs.Warmup) // the warmup attribute, in the background (node_warmup.go)
	return nil
}

// stage starts serving the recorded volume of req: its own FUSE process,
// or its share's (whose name and prefix it records).
func (n *Node) stage(ctx context.Context, req supervisor.Request) error {
	v, _ := n.state.Get(req.VolumeID)
	if !v.Shared {
		return n.mounter.Stage(ctx, req)
	}
	was := shareRecord{v.Share, v.ShareRoot}
	rec, err := n.stageShared(ctx, req, was)
	if err != nil || rec == was {
		return err
	}
	return n.state.Update(req.VolumeID, func(v nodestate.Volume, ok bool) (nodestate.Volume, bool, error) {
		v.Share, v.ShareRoot = rec.ID, rec.Root
		return v, ok, nil
	})
}

// stageError classifies a supervisor error for toStatus.
func stageError(err error) error {
	switch {
	case errors.Is(err, supervisor.ErrConflict):
		return fmt.Errorf("%w: %w", ErrNameConflict, err)
	case errors.Is(err, supervisor.ErrExited) && (errors.Is(err, objstore.ErrNotFound) ||
		errors.Is(err, objstore.ErrAccessDenied) || errors.Is(err, objstore.ErrUnavailable)):
		// The FUSE process checked the bucket and said why it gave up
		// (its exit code; its last output is in the message): toStatus
		// answers NotFound, PermissionDenied or Unavailable.
		return err
	case errors.Is(err, supervisor.ErrExited):
		// The FUSE process's last output (in the message) says why.
		return fmt.Errorf("%w: %w", ErrPrecondition, err)
	}
	return err
}

// sharedCacheCredentialsID is the name the node state keeps a volume's
// shared cache tier credentials under, beside the store's (the volume ID
// itself): a NUL never occurs in a volume ID.
func sharedCacheCredentialsID(id string) string { return id + "\x00sharedCache" }

// forget drops a volume's record and credentials.
func (n *Node) forget(id string) {
	if err := n.state.Update(id, func(v nodestate.Volume, _ bool) (nodestate.Volume, bool, error) { return v, false, nil }); err != nil {
		klog.ErrorS(err, "dropping a volume from the node state", "volume", id)
	}
	for _, cid := range []string{id, sharedCacheCredentialsID(id)} {
		if err := n.state.DeleteCredentials(cid); err != nil {
			klog.ErrorS(err, "deleting a volume's credentials", "volume", id)
		}
	}
	if n.shares.running(id) {
		return // a share named after the volume serves others still: its rotation files are theirs
	}
	n.forgetRotation(id)
}

// NodeUnstageVolume stops the volume's warmup, unmounts the staging path
// and stops the FUSE process. The cache directory stays for the next
// stage. Unstaging a volume that is not staged (or whose mount is broken)
// succeeds.
func (n *Node) NodeUnstageVolume(ctx context.Context, req *csi.NodeUnstageVolumeRequest) (*csi.NodeUnstageVolumeResponse, error) {
	id, staging := req.GetVolumeId(), req.GetStagingTargetPath()
	switch {
	case id == "":
		return nil, toStatus(fmt.Errorf("%w: volume ID missing", ErrInvalidRequest))
	case staging == "":
		return nil, toStatus(fmt.Errorf("%w: staging target path missing", ErrInvalidRequest))
	}
	release, err := n.begin(ctx, id)
	if err != nil {
		return nil, toStatus(err)
	}
	defer release()
	n.stopWarmup(ctx, id)
	unstage := n.mounter.Unstage
	if s := n.shares.of(id); s != nil {
		unstage = func(ctx context.Context, id, staging string) error { return n.unstageShared(ctx, s, id, staging) }
	}
	if err := unstage(ctx, id, staging); err != nil {
		return nil, toStatus(err)
	}
	n.forget(id)
	klog.InfoS("volume unstaged", "volume", id, "staging", staging)
	n.volumesChanged()
	return &csi.NodeUnstageVolumeResponse{}, nil
}

// volumesChanged tells NodeConfig.VolumesChanged, if set.
func (n *Node) volumesChanged() {
	if n.cfg.VolumesChanged != nil {
		n.cfg.VolumesChanged()
	}
}

// sameGroup reports whether a request for volume mount group want (the
// pod's fsGroup; "" for none) can use a volume staged with group staged.
// One FUSE process serves every pod of a volume on a node and presents one
// group, so a pod with another fsGroup cannot be given its own.
func sameGroup(staged, want string) bool { return want == "" || want == staged }

// groupConflict is the error of a request for another volume mount group.
func groupConflict(id, staged, want string) error {
	shown := staged
	if shown == "" {
		shown = "none"
	}
	return fmt.Errorf("%w: volume %s is staged on this node with volume mount group (fsGroup) %s, not %s: one FUSE process "+
		"serves every pod of a volume on a node and presents one group; give the pods the same fsGroup, or schedule them on other nodes",
		ErrPrecondition, id, shown, want)
}

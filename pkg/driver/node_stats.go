package driver

import (
	"context"
	"fmt"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"golang.org/x/sys/unix"
)

// NodeGetVolumeStats reports the cache's capacity and use as the volume's
// bytes and inodes: what the FUSE file system answers to statfs, asked
// under a timeout. A broken mount is FailedPrecondition; its cause is in
// NodeGetVolumeHealth, which replaced the response's VolumeCondition in
// CSI 1.13 (docs/architecture.md, "Node plugin start-up and volume
// health"). A volume still being taken back after a restart is waited
// for, bounded by ctx.
func (n *Node) NodeGetVolumeStats(ctx context.Context, req *csi.NodeGetVolumeStatsRequest) (*csi.NodeGetVolumeStatsResponse, error) {
	id, path := req.GetVolumeId(), req.GetVolumePath()
	switch {
	case id == "":
		return nil, toStatus(fmt.Errorf("%w: volume ID missing", ErrInvalidRequest))
	case path == "":
		return nil, toStatus(fmt.Errorf("%w: volume path missing", ErrInvalidRequest))
	}
	if err := n.awaitTakenBack(ctx, id); err != nil {
		return nil, toStatus(err)
	}
	v, ok := n.state.Get(id)
	if !ok {
		return nil, toStatus(fmt.Errorf("%w: volume %s is not staged on this node", ErrVolumeNotFound, id))
	}
	if _, published := v.Targets[path]; !published && path != v.StagingPath {
		return nil, toStatus(fmt.Errorf("%w: volume %s is not published at %s", ErrVolumeNotFound, id, path))
	}
	if path == v.StagingPath {
		path = n.publishSource(id, path) // a shared volume's staging path is a plain directory
	}
	sctx, cancel := n.opContext(ctx)
	defer cancel()
	st, err := n.kernel.Statfs(sctx, path)
	if err != nil {
		return nil, toStatus(fmt.Errorf("%w: volume %s: %w", ErrPrecondition, id, err))
	}
	if st.Type != unix.FUSE_SUPER_MAGIC {
		// The broken mount was taken off and its successor is not in
		// place yet (a heal, a take-back): the path is a plain directory,
		// whose figures are its file system's, not the volume's.
		return nil, toStatus(fmt.Errorf("%w: volume %s: %s is not mounted (the volume is being remounted)", ErrPrecondition, id, path))
	}
	bsize := int64(st.Bsize)
	return &csi.NodeGetVolumeStatsResponse{
		Usage: []*csi.VolumeUsage{
			{Unit: csi.VolumeUsage_BYTES, Total: int64(st.Blocks) * bsize, Available: int64(st.Bavail) * bsize,
				Used: int64(st.Blocks-st.Bfree) * bsize},
			{Unit: csi.VolumeUsage_INODES, Total: int64(st.Files), Available: int64(st.Ffree),
				Used: int64(st.Files - st.Ffree)},
		},
	}, nil
}

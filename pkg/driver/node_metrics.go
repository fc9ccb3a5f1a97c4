package driver

import (
	"context"
)

// StagedVolume is a volume staged on this node, as the node plugin's
// metrics see it.
type StagedVolume struct {
	ID string
	// CacheDir is the volume's cache directory (its FUSE process's admin
	// socket lives there).
	CacheDir string
	// Served: the supervisor knows the volume; Healthy: its FUSE process
	// serves it and no heal is running.
	Served, Healthy bool
	// Heals counts the volume's heals since it was staged.
	Heals int64
}

// StagedVolumes lists the volumes of the node state with their
// supervision status.
func (n *Node) StagedVolumes(ctx context.Context) []StagedVolume {
	vols := n.state.List()
	out := make([]StagedVolume, 0, len(vols))
	for _, v := range vols {
		sv := StagedVolume{ID: v.ID, CacheDir: cacheDirFor(n.cfg.CacheRoot, v.ID)}
		if s, err := n.mounter.Check(ctx, v.ID); err == nil {
			sv.Served, sv.Healthy, sv.Heals = true, s.Healthy && !s.Healing, s.Heals
		}
		out = append(out, sv)
	}
	return out
}

// Heals counts the heals of all volumes since the node plugin started (0
// when the Mounter does not count them).
func (n *Node) Heals() int64 {
	if h, ok := n.mounter.(interface{ Heals() int64 }); ok {
		return h.Heals()
	}
	return 0
}

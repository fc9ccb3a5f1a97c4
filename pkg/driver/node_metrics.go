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
	// Members are the volumes a share serves (ID is then the share's);
	// nil for a volume's own process.
	Members []string
}

// StagedVolumes lists the FUSE processes of the volumes of the node state
// with their supervision status: a volume's own, or once for each share
// (named by the share's ID, its members' in Members), so that a share's
// cache is counted once.
func (n *Node) StagedVolumes(ctx context.Context) []StagedVolume {
	vols := n.state.List()
	out := make([]StagedVolume, 0, len(vols))
	seen := map[string]bool{}
	for _, v := range vols {
		sv := StagedVolume{ID: v.ID, CacheDir: cacheDirFor(n.cfg.CacheRoot, v.ID)}
		if s := n.shares.of(v.ID); s != nil {
			if seen[s.id] {
				continue
			}
			seen[s.id] = true
			sv.ID, sv.CacheDir, sv.Members = s.id, cacheDirFor(n.cfg.CacheRoot, s.id), n.ShareMembers(s.id)
		}
		if s, err := n.mounter.Check(ctx, sv.ID); err == nil {
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

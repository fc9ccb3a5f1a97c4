package driver

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/container-storage-interface/spec/lib/go/csi"

	"github.com/basin-csi/basin/pkg/supervisor"
)

// Health reasons (CamelCase, for machines).
const (
	reasonHealing    = "Healing"
	reasonBroken     = "MountBroken"
	reasonNotServed  = "NotServed"
	reasonHealed     = "RecentlyHealed"
	reasonTakingBack = "TakingBack"
)

// recentHeal is how long a heal is still reported (DEGRADED) after it
// succeeded.
const recentHeal = 5 * time.Minute

// NodeGetVolumeHealth reports the volume from the node's side (CSI 1.13,
// the successor of VolumeCondition): INACCESSIBLE while the mount is broken
// or no FUSE process serves it, DEGRADED while it is being healed, while
// a restarted node plugin takes it back, and for a while after a heal
// (with its cause and pause), nothing when healthy. It never waits.
func (n *Node) NodeGetVolumeHealth(ctx context.Context, req *csi.NodeGetVolumeHealthRequest) (*csi.NodeGetVolumeHealthResponse, error) {
	id := req.GetVolumeId()
	if id == "" {
		return nil, toStatus(fmt.Errorf("%w: volume ID missing", ErrInvalidRequest))
	}
	v, ok := n.state.Get(id)
	if !ok {
		return nil, toStatus(fmt.Errorf("%w: volume %s is not staged on this node", ErrVolumeNotFound, id))
	}
	if p := req.GetVolumePublishPath(); p != "" {
		if _, published := v.Targets[p]; !published {
			return nil, toStatus(fmt.Errorf("%w: volume %s is not published at %s", ErrVolumeNotFound, id, p))
		}
	}
	return &csi.NodeGetVolumeHealthResponse{VolumeHealth: &csi.VolumeHealth{
		VolumeId:       id,
		HealthStatuses: n.health(ctx, id, time.Now()),
	}}, nil
}

// health maps the supervisor's status of a volume to CSI health entries.
func (n *Node) health(ctx context.Context, id string, now time.Time) []*csi.VolumeHealth_VolumeHealthEntry {
	entry := func(t csi.VolumeHealthErrorType, reason, msg string) []*csi.VolumeHealth_VolumeHealthEntry {
		return []*csi.VolumeHealth_VolumeHealthEntry{{Status: t, Reason: reason, Message: msg}}
	}
	if n.takingBack(id) {
		return entry(csi.VolumeHealthErrorType_DEGRADED, reasonTakingBack,
			"the node plugin restarted and is taking the volume back")
	}
	s, err := n.check(ctx, id)
	switch {
	case errors.Is(err, supervisor.ErrNotStaged):
		return entry(csi.VolumeHealthErrorType_INACCESSIBLE, reasonNotServed,
			"no FUSE process serves the volume on this node; unstage and stage it again")
	case err != nil:
		return entry(csi.VolumeHealthErrorType_INACCESSIBLE, reasonBroken, err.Error())
	case s.Healing:
		return entry(csi.VolumeHealthErrorType_DEGRADED, reasonHealing, s.Message)
	case !s.Healthy:
		return entry(csi.VolumeHealthErrorType_INACCESSIBLE, reasonBroken, s.Message)
	case s.LastHeal != nil && now.Sub(s.LastHeal.Time) < recentHeal:
		return entry(csi.VolumeHealthErrorType_DEGRADED, reasonHealed, healMessage(s))
	}
	return nil
}

// healMessage describes a volume's heals.
func healMessage(s supervisor.Status) string {
	h := s.LastHeal
	return fmt.Sprintf("serving again (FUSE process %d); %d heals, the last at %s after %q, pause %v",
		s.Pid, s.Heals, h.Time.UTC().Format(time.RFC3339), h.Cause, h.Pause.Round(time.Millisecond))
}

package supervisor

import (
	"context"
	"errors"
	"os"
	"time"

	"k8s.io/klog/v2"

	"github.com/basin-csi/basin/pkg/fdholder"
)

// Holder keeps duplicates of the mounts' /dev/fuse descriptors in a
// process outside the node plugin (*fdholder.Client), so that the
// connections survive a node plugin restart: the next node plugin gets
// them back and takes them over (--resume) instead of mounting again.
type Holder interface {
	// Put hands the holder a duplicate of fd, replacing the volume's
	// previous one.
	Put(ctx context.Context, e fdholder.Entry, fd *os.File) error
	// Get returns a volume's entry and a duplicate of its descriptor, or
	// an error wrapping fdholder.ErrNotHeld.
	Get(ctx context.Context, volumeID string) (fdholder.Entry, *os.File, error)
	// Drop makes the holder close the volume's descriptor.
	Drop(ctx context.Context, volumeID string) error
	// Watch returns a channel closed when the holder goes away: the next
	// one holds nothing and is handed every descriptor again.
	Watch(ctx context.Context) (instance string, gone <-chan struct{}, err error)
}

// holderTimeout bounds one call to the holder.
const holderTimeout = 5 * time.Second

// holdLoop keeps the holder holding every volume's connection: after each
// (re)connection it hands over all of them. It returns when the Manager
// closes.
func (m *Manager) holdLoop() {
	defer close(m.holdDone)
	connected := true // log the first failure
	for {
		instance, gone, err := m.cfg.Holder.Watch(m.ctx)
		if err == nil {
			klog.InfoS("connected to the descriptor holder", "instance", instance)
			connected = true
			m.holdAll()
			select {
			case <-gone:
				if m.ctx.Err() == nil {
					klog.InfoS("the descriptor holder went away; the next one gets every connection again", "instance", instance)
				}
			case <-m.ctx.Done():
			}
		} else if connected && m.ctx.Err() == nil {
			klog.ErrorS(err, "no descriptor holder: a node plugin restart will remount instead of taking the connections over")
			connected = false
		}
		select {
		case <-m.ctx.Done():
			return
		case <-time.After(time.Second):
		}
	}
}

// holdAll hands the holder every volume's connection.
func (m *Manager) holdAll() {
	m.mu.Lock()
	vols := make([]*volume, 0, len(m.vols))
	for _, v := range m.vols {
		vols = append(vols, v)
	}
	m.mu.Unlock()
	for _, v := range vols {
		m.hold(v)
	}
}

// hold hands the holder v's connection. A failure is logged: the volume
// works without, only a node plugin restart then remounts it.
func (m *Manager) hold(v *volume) {
	if err := m.holdOnce(v); err != nil {
		klog.ErrorS(err, "handing a connection to the descriptor holder", "volume", v.req.VolumeID)
	}
}

// holdStaged is hold for a new mount of a stage: while the holder cannot
// take the connection it tries again every holdRetry, for up to holdWait.
// The holder's DaemonSet may start after the node plugin's (a node's
// boot, both rolled at once), and until the holder has the connection a
// node plugin restart aborts it and remounts, failing every open file
// and, until the re-bind, every call on the volume: a saturated make
// chaos run once counted 23,847 failed reads in one such restart (the
// test started the holder and the plugin together and did not wait for
// the hand-over; holdLoop's next try was up to a second away).
func (m *Manager) holdStaged(ctx context.Context, v *volume) {
	ctx, cancel := context.WithTimeout(ctx, holdWait)
	defer cancel()
	for {
		err := m.holdOnce(v)
		if err == nil {
			return
		}
		select {
		case <-ctx.Done():
			klog.ErrorS(err, "handing a connection to the descriptor holder; a node plugin restart before it holds it remounts the volume", "volume", v.req.VolumeID)
			return
		case <-time.After(holdRetry):
		}
	}
}

// A stage's wait for the holder (holdStaged).
const (
	holdWait  = 5 * time.Second
	holdRetry = 100 * time.Millisecond
)

// holdOnce hands the holder v's connection once (nil without a holder,
// or while v heals: the heal hands over the new connection).
func (m *Manager) holdOnce(v *volume) error {
	if m.cfg.Holder == nil {
		return nil
	}
	v.holdMu.Lock()
	defer v.holdMu.Unlock()
	v.mu.Lock()
	fd, e := v.fd, fdholder.Entry{VolumeID: v.req.VolumeID, Session: v.session, Dev: v.dev}
	v.mu.Unlock()
	if fd == nil {
		return nil
	}
	ctx, cancel := context.WithTimeout(m.ctx, holderTimeout)
	defer cancel()
	return m.cfg.Holder.Put(ctx, e, fd)
}

// release makes the holder close v's connection, before the Manager
// closes its own descriptor to abort the connection (a remount) or
// unstages it. The caller has taken v.fd away.
func (m *Manager) release(v *volume) {
	v.holdMu.Lock()
	defer v.holdMu.Unlock()
	m.drop(v.req.VolumeID)
}

// drop makes the holder close a volume's connection.
func (m *Manager) drop(volumeID string) {
	if m.cfg.Holder == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), holderTimeout)
	defer cancel()
	if err := m.cfg.Holder.Drop(ctx, volumeID); err != nil {
		klog.ErrorS(err, "the descriptor holder did not release a connection", "volume", volumeID)
	}
}

// adopt takes over the connection the holder kept for v across a node
// plugin restart: if it still serves v's staging path, a FUSE process
// resumes it and every open file and published bind mount stays valid.
// It reports false when there is none or the takeover failed; the
// connection is then released (aborted) and the caller mounts again.
func (m *Manager) adopt(ctx context.Context, v *volume) bool {
	if m.cfg.Holder == nil {
		return false
	}
	req := v.req
	e, fd, err := m.cfg.Holder.Get(ctx, req.VolumeID)
	switch {
	case errors.Is(err, fdholder.ErrNotHeld):
		return false
	case err != nil:
		klog.ErrorS(err, "asking the descriptor holder for a connection", "volume", req.VolumeID)
		return false
	}
	dev, err := m.cfg.Kernel.MountDev(ctx, req.StagingPath)
	if err != nil || dev != e.Dev || e.Session == "" {
		klog.InfoS("the held connection no longer serves the staging path; mounting again", "volume", req.VolumeID,
			"staging", req.StagingPath, "heldDev", e.Dev, "mountedDev", dev, "err", err)
		m.drop(req.VolumeID)
		_ = fd.Close()
		return false
	}
	t0 := time.Now()
	v.mu.Lock()
	v.dev = dev
	v.mu.Unlock()
	if err := m.takeover(ctx, v, fd, e.Session); err != nil {
		klog.ErrorS(err, "taking over a held connection failed; mounting again", "volume", req.VolumeID)
		m.drop(req.VolumeID)
		_ = fd.Close()
		return false
	}
	ev := HealEvent{Time: t0, Cause: "node plugin restarted", Pause: time.Since(t0), Method: "takeover"}
	m.heals.Add(1)
	v.mu.Lock()
	ev.Started = v.started.Sub(t0)
	v.heals++
	v.last = &ev
	v.mu.Unlock()
	klog.InfoS("took over the connection held across a node plugin restart", "volume", req.VolumeID,
		"session", e.Session, "pause", ev.Pause, "started", ev.Started)
	return true
}

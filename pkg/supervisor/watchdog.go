package supervisor

import (
	"context"
	"errors"
	"fmt"
	"syscall"
	"time"

	"k8s.io/klog/v2"
)

// watch is a volume's watchdog: it notices the FUSE process's exit at once
// (the child's Wait returns) and a broken or hung mount at the next
// periodic check, and heals. It returns when the volume is unstaged or
// the Manager closed.
func (m *Manager) watch(v *volume) {
	defer close(v.done)
	tick := time.NewTicker(m.cfg.CheckInterval)
	defer tick.Stop()
	// A volume without a child (its last heal failed) is healed again
	// after the backoff: its "exited" channel is always ready.
	noChild := make(chan struct{})
	close(noChild)
	failures := 0
	for {
		m.prepareStandby(v)
		v.mu.Lock()
		c := v.child
		v.mu.Unlock()
		exited := noChild
		if c != nil {
			exited = c.exited
		}
		exitCause := func() string {
			if c == nil {
				return "no FUSE process: the last heal failed"
			}
			return fmt.Sprintf("FUSE process %d exited (%v)%s", c.proc.Pid(), c.err, v.logs.tailMessage(1))
		}
		var cause string
		resumable := true // the connection itself is alive
		select {
		case <-v.stop:
			return
		case <-m.ctx.Done():
			return
		case <-exited:
			cause = exitCause()
		case <-tick.C:
			// The check runs aside: an exit during a check that now waits
			// for the dead process must still be noticed at once.
			ctx, cancel := context.WithTimeout(m.ctx, m.cfg.CheckTimeout)
			checked := make(chan error, 1)
			go func() { checked <- m.cfg.Kernel.Check(ctx, v.req.StagingPath) }()
			var err error
			select {
			case err = <-checked:
			case <-exited:
				cancel()
				cause = exitCause()
			case <-v.stop:
				cancel()
				return
			}
			cancel()
			if cause != "" {
				break
			}
			if err == nil {
				continue
			}
			cause = "mount check failed: " + err.Error()
			resumable = !connectionGone(err)
		}
		if failures > 0 {
			backoff := min(time.Second<<min(failures-1, 10), m.cfg.MaxHealBackoff)
			select {
			case <-v.stop:
				return
			case <-m.ctx.Done():
				return
			case <-time.After(backoff):
			}
		}
		if m.heal(v, cause, resumable) {
			failures = 0
		} else {
			failures++
		}
	}
}

// connectionGone reports whether a failed check means that the kernel
// ended the FUSE connection (ENOTCONN: it was aborted), leaving nothing to
// take over. A hung server, or one that answers with errors (EIO: a bad
// reply, a panic), is replaced on its connection: a remount would break
// every open file (and a writer's unsaved data); should the connection be
// gone all the same, the takeover fails and the heal remounts.
func connectionGone(err error) bool {
	return errors.Is(err, ErrBroken) && (errors.Is(err, syscall.ENOTCONN) || errors.Is(err, syscall.ECONNABORTED))
}

// heal replaces a dead or hung FUSE process. First choice, transparent
// takeover: the Manager still holds the descriptor, so the kernel mount
// never died; a new process resumes the connection and the kernel resends
// what the dead one left unanswered: pods see a pause, not an error.
// Fallback (no descriptor, no session record, or the successor failed):
// remount and re-bind, which pods see only with HostToContainer
// propagation and which breaks their open files.
func (m *Manager) heal(v *volume, cause string, resumable bool) bool {
	t0 := time.Now()
	v.mu.Lock()
	c, fd, session := v.child, v.fd, v.session
	v.child, v.fd = nil, nil
	v.healing, v.broken = true, cause
	v.mu.Unlock()
	klog.InfoS("healing volume", "volume", v.req.VolumeID, "cause", cause)

	if c != nil {
		c.kill() // hung, or already gone
	}
	s := v.takeStandby()
	var err error
	how, usedStandby := "takeover", false
	resumable = resumable && fd != nil && session != ""
	switch {
	case resumable && s != nil:
		if err = m.activate(v, s, fd, session); err == nil {
			usedStandby = true
			break
		}
		klog.ErrorS(err, "the standby did not take over; starting a process", "volume", v.req.VolumeID)
		fallthrough
	case resumable:
		if err = m.takeover(m.ctx, v, fd, session); err != nil {
			klog.ErrorS(err, "takeover failed; remounting", "volume", v.req.VolumeID)
		}
	case s != nil:
		s.release() // before the connection is aborted: it holds it too
	}
	if !resumable || err != nil {
		how = "remount"
		m.release(v) // the holder's copy must go too, or the connection lives on
		if fd != nil {
			_ = fd.Close() // the last holder: the kernel aborts the dead connection
		}
		err = m.start(m.ctx, v, false)
	}
	ev := HealEvent{Time: t0, Cause: cause, Pause: time.Since(t0), Method: how, Standby: usedStandby}
	if err != nil {
		ev.Err = err.Error()
	}
	m.heals.Add(1)
	v.mu.Lock()
	if err == nil {
		ev.Started = v.started.Sub(t0)
	}
	v.heals++
	v.healing = false
	v.last = &ev
	if err == nil {
		v.broken = ""
	} else {
		v.broken = cause + "; heal failed: " + err.Error()
	}
	v.mu.Unlock()
	if err != nil {
		klog.ErrorS(err, "heal failed", "volume", v.req.VolumeID, "cause", cause, "pause", ev.Pause)
		return false
	}
	klog.InfoS("volume healed", "volume", v.req.VolumeID, "cause", cause, "method", how, "pause", ev.Pause,
		"noticedAt", t0.Format("15:04:05.000"), "started", ev.Started, "standby", usedStandby)
	return true
}

// Heals counts the heals of all volumes since the Manager started (for
// metrics).
func (m *Manager) Heals() int64 { return m.heals.Load() }

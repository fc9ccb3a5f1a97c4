package supervisor

import (
	"fmt"
	"os"
	"time"

	"k8s.io/klog/v2"
)

// A standby is a FUSE process started before it is needed: it has gone
// through the start of a process (exec, the Go runtime, every package's
// initialisation), read its hand-off file and opened the store, and waits
// (csi-driver mount --resume --standby-fd 4) for a byte on a pipe before
// it opens the cache (whose lock the serving process holds) and takes the
// volume's connection over. A takeover hands the connection to it instead
// of starting a process then: on a node whose cores are busy, that start
// is most of a heal's pause (docs/architecture.md, "Heals on a busy
// node").
//
// The standby holds a duplicate of the connection's descriptor, so it is
// stopped before the Manager closes its own to abort the connection (a
// remount, an unstage). It exits by itself when the pipe is closed
// without a byte: when the node plugin ends, for one.

// standbyFD is the standby's descriptor of the go-ahead pipe (after the
// connection's, 3).
const standbyFD = 4

// standby is a waiting FUSE process.
type standby struct {
	// constant
	c       *child
	goAhead *os.File // the pipe's write end
	fd      *os.File // the connection it inherited
	session string
}

// release stops s without a go-ahead and waits for its exit.
func (s *standby) release() {
	_ = s.goAhead.Close() // it exits on EOF; the kill makes sure
	s.c.kill()
}

// alive reports whether s's process still runs.
func (s *standby) alive() bool {
	select {
	case <-s.c.exited:
		return false
	default:
		return true
	}
}

// prepareStandby starts a standby for v's connection unless it has a
// live one for it already, or v has no serving process (no connection to
// take over, or the last heal failed). Only v's watchdog calls it.
func (m *Manager) prepareStandby(v *volume) {
	if !m.cfg.Standby {
		return
	}
	v.mu.Lock()
	s, fd, session, serving := v.standby, v.fd, v.session, v.child != nil
	if s != nil && (!s.alive() || s.fd != fd || s.session != session) {
		v.standby = nil
	} else {
		s = nil // none, or the right one
	}
	have := v.standby != nil
	v.mu.Unlock()
	if s != nil {
		if !s.alive() {
			klog.InfoS("standby FUSE process exited; starting another", "volume", v.req.VolumeID,
				"pid", s.c.proc.Pid(), "err", s.c.err)
		}
		s.release()
	}
	if have || fd == nil || session == "" || !serving {
		return
	}
	s, err := m.startStandby(v, fd, session)
	if err != nil {
		klog.ErrorS(err, "starting a standby FUSE process; a heal will start one then", "volume", v.req.VolumeID)
		return
	}
	v.mu.Lock()
	v.standby = s
	v.mu.Unlock()
	klog.V(2).InfoS("standby FUSE process started", "volume", v.req.VolumeID, "pid", s.c.proc.Pid())
}

// startStandby starts a standby that would take over session on fd.
func (m *Manager) startStandby(v *volume, fd *os.File, session string) (*standby, error) {
	r, w, err := os.Pipe()
	if err != nil {
		return nil, fmt.Errorf("supervisor: standby pipe: %w", err)
	}
	spec, cleanup, err := m.processSpec(v.req, fd, v.logs, session, true, false)
	if err != nil {
		_, _ = r.Close(), w.Close()
		return nil, err
	}
	spec.Args = append(spec.Args, "--standby-fd", fmt.Sprint(standbyFD))
	spec.ExtraFiles = append(spec.ExtraFiles, r)
	proc, err := m.cfg.Runner.Start(m.ctx, spec)
	_ = r.Close()
	if err != nil {
		_ = w.Close()
		cleanup()
		return nil, err
	}
	c := watchChild(proc)
	go func() { <-c.exited; cleanup() }()
	return &standby{c: c, goAhead: w, fd: fd, session: session}, nil
}

// takeStandby removes v's standby and returns it, or nil.
func (v *volume) takeStandby() *standby {
	v.mu.Lock()
	defer v.mu.Unlock()
	s := v.standby
	v.standby = nil
	return s
}

// activate gives s the go-ahead to take session over on fd and waits
// until it serves, as serve does for a process it starts. On error s is
// gone and fd is still the caller's.
func (m *Manager) activate(v *volume, s *standby, fd *os.File, session string) error {
	if s.fd != fd || s.session != session || !s.alive() {
		s.release()
		return fmt.Errorf("%w: the standby cannot take this connection over", ErrExited)
	}
	ctx, cancel := m.readyContext()
	defer cancel()
	at := time.Now()
	_, err := s.goAhead.Write([]byte{'g'})
	_ = s.goAhead.Close()
	if err != nil {
		s.c.kill()
		return fmt.Errorf("supervisor: volume %s: go-ahead to standby %d: %w", v.req.VolumeID, s.c.proc.Pid(), err)
	}
	return m.await(ctx, v, s.c, fd, session, at, true)
}

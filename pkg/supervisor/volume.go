package supervisor

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"sync"
	"syscall"
	"time"

	"k8s.io/klog/v2"

	"github.com/basin-csi/basin/pkg/mountspec"
)

// volume is one supervised volume.
type volume struct {
	// constant
	req      Request
	logs     *lineLog
	stop     chan struct{} // closed by Unstage and Close
	stopOnce sync.Once
	done     chan struct{} // closed when the watchdog returned

	// holdMu orders handing fd to the Holder and releasing it there: a
	// resync never hands over a descriptor a heal released.
	holdMu sync.Mutex

	mu      sync.Mutex // guards the fields below
	fd      *os.File   // the Manager's descriptor of the mount; nil while healing
	session string     // names the kernel connection of fd (--session)
	dev     uint64     // the mount's device number (Kernel.MountDev)
	child   *child     // the serving process; nil while healing or after a failed heal
	started time.Time  // when child was started (a standby: given the go-ahead)
	standby *standby   // started ahead of need for fd (standby.go); nil: none
	healing bool
	broken  string // why the volume is unhealthy; "" when healthy
	heals   int64
	last    *HealEvent
}

func newVolume(req Request, logLines int) *volume {
	return &volume{
		req:  req,
		logs: newLineLog(req.VolumeID, logLines),
		stop: make(chan struct{}),
		done: make(chan struct{}),
	}
}

// status snapshots v's health.
func (v *volume) status() Status {
	v.mu.Lock()
	defer v.mu.Unlock()
	s := Status{Healthy: !v.healing && v.broken == "", Healing: v.healing, Message: v.broken, Heals: v.heals}
	if v.healing {
		s.Message = "healing: " + v.broken
	}
	if v.child != nil {
		s.Pid = v.child.proc.Pid()
	}
	if v.standby != nil && v.standby.alive() {
		s.Standby = v.standby.c.proc.Pid()
	}
	if v.last != nil {
		ev := *v.last
		s.LastHeal = &ev
	}
	return s
}

// child is a started FUSE process.
type child struct {
	// constant
	proc   Process
	exited chan struct{} // closed when Wait returned
	err    error         // Wait's result; read only after exited is closed
}

// watchChild waits for proc in a goroutine: exit is noticed at once.
func watchChild(proc Process) *child {
	c := &child{proc: proc, exited: make(chan struct{})}
	go func() {
		c.err = proc.Wait()
		close(c.exited)
	}()
	return c
}

// stop sends SIGTERM, then SIGKILL after grace, and waits for the exit.
func (c *child) stop(grace time.Duration) {
	if err := c.proc.Signal(syscall.SIGTERM); err != nil {
		c.kill()
		return
	}
	select {
	case <-c.exited:
	case <-time.After(grace):
		c.kill()
	}
}

// kill sends SIGKILL and waits for the exit.
func (c *child) kill() {
	_ = c.proc.Signal(syscall.SIGKILL)
	<-c.exited
}

// start mounts v's staging path with a new descriptor, starts a FUSE
// process on it, waits until it answers, re-binds the published targets
// and hands the descriptor to the Holder. first is the volume's first
// start (Stage): processes an earlier node plugin left are stopped, and
// a connection the Holder kept is taken over rather than mounted again.
// On error nothing is left mounted or running.
func (m *Manager) start(ctx context.Context, v *volume, first bool) (err error) {
	ctx, cancel := context.WithTimeout(ctx, m.cfg.ReadyTimeout)
	defer cancel()
	req := v.req
	if first && m.cfg.Reaper != nil {
		if err := m.cfg.Reaper(ctx, req.VolumeID, req.CacheDir); err != nil {
			return err
		}
	}
	if first && m.adopt(ctx, v) {
		return nil
	}
	if err := m.cfg.Kernel.Unmount(ctx, req.StagingPath); err != nil {
		return err
	}
	fd, err := m.cfg.Kernel.MountFUSE(ctx, req.StagingPath, "basin:"+req.Spec.SourceURL(), req.Spec.Flags())
	if err != nil {
		return err
	}
	defer func() {
		if err == nil {
			return
		}
		// Closing our descriptor after the child's death aborts the
		// connection, which also releases a stat still waiting for it.
		_ = fd.Close()
		if uerr := m.cfg.Kernel.Unmount(context.Background(), req.StagingPath); uerr != nil {
			klog.ErrorS(uerr, "cleaning up a failed start", "volume", req.VolumeID)
		}
	}()
	dev, err := m.cfg.Kernel.MountDev(ctx, req.StagingPath)
	if err != nil {
		return err
	}
	v.mu.Lock()
	v.dev = dev
	v.mu.Unlock()
	session := newSessionID()
	// Only a stage checks the bucket: a remount heal serves pods that
	// already use the volume, from its cache if the store is down.
	if err := m.serve(ctx, v, fd, session, false, first); err != nil {
		return err
	}
	if m.cfg.ReadAhead > 0 {
		// After INIT (serve waited for an answer), which resets it.
		if err := m.cfg.Kernel.SetReadAhead(dev, m.cfg.ReadAhead); err != nil {
			klog.ErrorS(err, "setting the mount's read-ahead; sequential reads go in 128 KiB requests", "volume", req.VolumeID)
		}
	}
	m.rebind(ctx, v)
	if first {
		m.holdStaged(ctx, v)
	} else {
		m.hold(v)
	}
	return nil
}

// takeover starts a new FUSE process on the descriptor v's dead one
// served: the kernel mount never went away, and the new process resumes
// the connection (--resume), so no pod sees an error. A successor that
// dies before it serves (killed, out of memory, a crash while the node is
// overloaded) is replaced, after a short backoff, until at least
// takeoverAttempts processes were tried and TakeoverPatience has passed.
// Meanwhile the kernel queues the volume's calls, so pods wait instead of
// failing. Only then does the caller fall back to a remount, which breaks
// every open file and fails every call on the volume until the re-bind
// (make soak: a successor killed during a node plugin restart's takeover
// made ~900,000 calls fail; with three soaks on two cores, three
// successors in a row were killed while each took 5 s to start, and the
// remount after the third failed ~70,000 calls). A connection found gone
// (ENOTCONN) is not tried again.
func (m *Manager) takeover(ctx context.Context, v *volume, fd *os.File, session string) error {
	start := time.Now()
	backoff := takeoverBackoff
	for attempt := 1; ; attempt++ {
		err := m.takeoverOnce(ctx, v, fd, session)
		if err == nil || connectionGone(err) || ctx.Err() != nil || m.ctx.Err() != nil {
			return err
		}
		if attempt >= takeoverAttempts && time.Since(start) >= m.cfg.TakeoverPatience {
			return err
		}
		klog.ErrorS(err, "the successor did not take over; starting another", "volume", v.req.VolumeID, "attempt", attempt)
		select {
		case <-ctx.Done():
			return err
		case <-m.ctx.Done():
			return err
		case <-time.After(backoff):
		}
		backoff = min(2*backoff, maxTakeoverBackoff)
	}
}

const (
	// takeoverAttempts is the least number of processes a takeover
	// starts before it may give up.
	takeoverAttempts = 3
	// takeoverBackoff is the first wait between two successors; it
	// doubles up to maxTakeoverBackoff, so a successor that crashes at
	// once does not spin.
	takeoverBackoff    = 100 * time.Millisecond
	maxTakeoverBackoff = 2 * time.Second
)

// takeoverOnce is one successor's takeover.
func (m *Manager) takeoverOnce(ctx context.Context, v *volume, fd *os.File, session string) error {
	ctx, cancel := context.WithTimeout(ctx, m.cfg.ReadyTimeout)
	defer cancel()
	return m.serve(ctx, v, fd, session, true, false)
}

// serve starts a FUSE process on fd and waits until the mount answers; on
// success the process and fd become v's. On error the process is gone and
// fd is still the caller's. checkBucket has a fresh (not resumed) process
// refuse a bucket it cannot use before it serves.
func (m *Manager) serve(ctx context.Context, v *volume, fd *os.File, session string, resume, checkBucket bool) error {
	req := v.req
	spec, cleanup, err := m.processSpec(req, fd, v.logs, session, resume, checkBucket)
	if err != nil {
		return err
	}
	// The child reads and deletes its hand-off file as it starts; we
	// remove what it left only once it has exited (or never started), since
	// readiness can be seen before a slow child has read the file.
	proc, err := m.cfg.Runner.Start(ctx, spec)
	if err != nil {
		cleanup()
		return err
	}
	started := time.Now()
	c := watchChild(proc)
	go func() { <-c.exited; cleanup() }()
	return m.await(ctx, v, c, fd, session, started, resume)
}

// await waits until c, started (or, a standby, given the go-ahead) at
// started, answers on v's mount; on success c and fd become v's. On error
// c is gone.
func (m *Manager) await(ctx context.Context, v *volume, c *child, fd *os.File, session string, started time.Time, resume bool) error {
	req, proc := v.req, c.proc
	ready := make(chan error, 1)
	go func() { ready <- m.cfg.Kernel.Check(ctx, req.StagingPath) }()
	var err error
	select {
	case err = <-ready:
	case <-c.exited:
	}
	select {
	case <-c.exited: // also when it answered and died at once
		err = exitError(c.err)
		// Its last words say why: let them reach the log first.
		if d, ok := proc.(outputDrainer); ok {
			select {
			case <-d.Drained():
			case <-time.After(drainTimeout):
			}
		}
	default:
	}
	if err != nil {
		c.kill()
		return fmt.Errorf("supervisor: volume %s: FUSE process %d not ready: %w%s",
			req.VolumeID, proc.Pid(), err, v.logs.tailMessage(5))
	}
	v.mu.Lock()
	v.fd, v.child, v.session, v.started = fd, c, session, started
	v.mu.Unlock()
	klog.InfoS("FUSE process serving", "volume", req.VolumeID, "pid", proc.Pid(), "staging", req.StagingPath, "resumed", resume,
		"startedAt", started.Format("15:04:05.000"), "ready", time.Since(started))
	return nil
}

// readyContext bounds a takeover until the new process answers.
func (m *Manager) readyContext() (context.Context, context.CancelFunc) {
	return context.WithTimeout(m.ctx, m.cfg.ReadyTimeout)
}

// drainTimeout bounds the wait for a dead child's last output.
const drainTimeout = time.Second

// newSessionID names a new kernel connection.
func newSessionID() string {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// rebind makes the volume's bind mounts again (Config.Binds), in order: a
// published target gets the staging path. A target that cannot be bound
// (its pod is gone) is logged and skipped.
func (m *Manager) rebind(ctx context.Context, v *volume) {
	for _, b := range m.cfg.Binds(v.req.VolumeID) {
		source := b.Source
		if source == "" {
			source = v.req.StagingPath
		}
		if err := m.cfg.Kernel.Bind(ctx, source, b.Target, b.ReadOnly); err != nil {
			klog.ErrorS(err, "re-binding a published target", "volume", v.req.VolumeID, "target", b.Target)
			continue
		}
		klog.InfoS("re-bound published target", "volume", v.req.VolumeID, "target", b.Target, "readOnly", b.ReadOnly)
	}
}

// teardown unmounts v's staging path, releases the descriptor and stops
// the FUSE process (which sees its mount go away and exits by itself).
func (m *Manager) teardown(ctx context.Context, v *volume) error {
	if s := v.takeStandby(); s != nil {
		s.release() // it holds the connection too
	}
	if err := m.cfg.Kernel.Unmount(ctx, v.req.StagingPath); err != nil {
		return err
	}
	v.mu.Lock()
	fd, c := v.fd, v.child
	v.fd, v.child = nil, nil
	v.mu.Unlock()
	m.release(v)
	if fd != nil {
		_ = fd.Close()
	}
	if c != nil {
		c.stop(m.cfg.StopTimeout)
	}
	klog.InfoS("volume unstaged", "volume", v.req.VolumeID, "staging", v.req.StagingPath)
	return nil
}

// processSpec builds the command line of req's FUSE process, serving fd
// as descriptor 3: identity and session flags only; the mount spec and the
// credentials go in a hand-off file the child reads and deletes. cleanup
// removes the file if the child did not.
func (m *Manager) processSpec(req Request, fd *os.File, out *lineLog, session string, resume, checkBucket bool) (spec ProcessSpec, cleanup func(), err error) {
	path, err := mountspec.WriteHandoffFile(m.cfg.CredentialsDir, mountspec.Handoff{Spec: req.Spec, Credentials: req.Credentials,
		SharedCacheCredentials: req.SharedCacheCredentials})
	if err != nil {
		return ProcessSpec{}, nil, err
	}
	cleanup = func() {
		if err := os.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
			klog.ErrorS(err, "removing a hand-off file", "volume", req.VolumeID)
		}
	}
	// --cache-dir stays in argv: ReapProcs finds left-over processes by it.
	args := []string{"mount", "--fd", "3", "--volume-id", req.VolumeID, "--cache-dir", req.CacheDir, "--session", session}
	if resume {
		args = append(args, "--resume")
	}
	if !resume && !checkBucket {
		args = append(args, "--no-bucket-check")
	}
	args = append(args, "--spec-file", path)
	env := append([]string(nil), m.cfg.Env...)
	return ProcessSpec{Path: m.cfg.Binary, Args: args, Env: env, ExtraFiles: []*os.File{fd}, Output: out}, cleanup, nil
}

// exitError describes a child's exit before it served (waitErr is its
// Wait's result): ErrExited, and the objstore sentinel its exit code
// stands for (a missing bucket, refused credentials, an unreachable
// store; mountspec.ExitError).
func exitError(waitErr error) error {
	var coded interface{ ExitCode() int }
	if errors.As(waitErr, &coded) {
		if cause := mountspec.ExitError(coded.ExitCode()); cause != nil {
			return fmt.Errorf("%w before serving (%w)", ErrExited, cause)
		}
	}
	return fmt.Errorf("%w before serving (%v)", ErrExited, waitErr)
}

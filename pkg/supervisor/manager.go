package supervisor

import (
	"context"
	"errors"
	"fmt"
	"os"
	"reflect"
	"sync"
	"sync/atomic"
	"time"

	"github.com/basin-csi/basin/internal/bdi"
	"github.com/basin-csi/basin/internal/keyedmutex"
	"github.com/basin-csi/basin/pkg/mountspec"
	"github.com/basin-csi/basin/pkg/objstore"
)

// Request is one volume to stage: the typed form of a NodeStageVolume.
type Request struct {
	// VolumeID names the volume in logs and errors.
	VolumeID string
	// StagingPath is the directory the FUSE file system is mounted on.
	StagingPath string
	// CacheDir is the volume's cache directory on this node.
	CacheDir string
	// Spec is the mount (no secret). It reaches the child, with
	// Credentials, in a 0600 hand-off file, never in argv; its mount
	// flags (read-only, noexec, noatime) are the staging mount's.
	Spec mountspec.Spec
	// Credentials are the store's credentials (zero: the default chain).
	Credentials objstore.Credentials
	// SharedCacheCredentials are the shared cache tier's (Spec.SharedCache;
	// zero: the default chain), handed over like Credentials.
	SharedCacheCredentials objstore.Credentials
}

// same reports whether r and o stage the same mount.
func (r Request) same(o Request) bool {
	return r.VolumeID == o.VolumeID && r.StagingPath == o.StagingPath && r.CacheDir == o.CacheDir &&
		reflect.DeepEqual(r.Spec, o.Spec)
}

// Bind is a bind mount re-made after a remount: a published target of a
// volume (a bind mount of the staging path), or a path bound from
// another directory (Source).
type Bind struct {
	// Source is what is bound on Target; "" is the volume's staging path.
	Source   string
	Target   string
	ReadOnly bool
}

// HealEvent describes one heal.
type HealEvent struct {
	Time  time.Time     // when the death was noticed
	Cause string        // why the volume was healed
	Pause time.Duration // from noticing to serving again (or giving up)
	// Started is from noticing to the start (exec) of the process that
	// serves again, or to the go-ahead to a standby (0 when none
	// serves); Pause - Started is that process's own start (runtime,
	// store, cache, INIT; a standby: cache and INIT) until it answered.
	Started time.Duration
	// Standby is true when a standby took the connection over.
	Standby bool
	// Method is "takeover" (a new process resumed the live connection) or
	// "remount" (a new mount, re-bound into the published targets).
	Method string
	Err    string // "" when the heal succeeded
}

// Status is what the Manager knows about a volume's health.
type Status struct {
	// Pid is the serving FUSE process, 0 when none runs.
	Pid int
	// Standby is the volume's standby FUSE process, 0 when none waits.
	Standby int
	// Healthy is false while the volume is broken or being healed.
	Healthy bool
	// Healing is true while a heal runs.
	Healing bool
	// Message says why the volume is not healthy.
	Message string
	// Heals counts the heals since the volume was staged.
	Heals int64
	// LastHeal is the latest heal, nil before the first.
	LastHeal *HealEvent
}

// Config configures a Manager.
type Config struct {
	// Binary is the csi-driver executable run as `Binary mount ...`.
	Binary string
	// Runner starts processes; ExecRunner{} when nil.
	Runner ProcessRunner
	// Kernel mounts; KernelFor(Holder) when nil.
	Kernel Kernel
	// Reaper stops FUSE processes left by an earlier node plugin before a
	// volume is (re)mounted; nil skips it (tests with fakes).
	Reaper Reaper
	// CredentialsDir is a 0700 directory for the hand-off files
	// (mountspec.WriteHandoffFile) and credential rotation files.
	CredentialsDir string
	// Env is the environment of the FUSE processes (os.Environ() when
	// nil).
	Env []string
	// Binds returns the bind mounts of a volume re-made, in order, after a
	// remount: its published targets, and for a FUSE process several
	// volumes share, each volume's staging path first. nil means none.
	Binds func(volumeID string) []Bind
	// ReadyTimeout bounds a child's start until it answers (default 60s;
	// a request's context may end it earlier).
	ReadyTimeout time.Duration
	// CheckInterval is the watchdog's stat period (default 5s);
	// CheckTimeout bounds each stat (default 10s): a mount that does not
	// answer within it counts as hung.
	CheckInterval, CheckTimeout time.Duration
	// StopTimeout is how long a child has to exit after SIGTERM before
	// SIGKILL (default 10s).
	StopTimeout time.Duration
	// LogLines is how many of a child's last output lines are kept for
	// error messages (default 50).
	LogLines int
	// MaxHealBackoff caps the wait between failed heals (default 30s).
	MaxHealBackoff time.Duration
	// TakeoverPatience is how long a takeover keeps starting successors
	// whose predecessors died before serving, while the kernel still holds
	// the connection, before it falls back to a remount (default 60s; at
	// least takeoverAttempts successors either way).
	TakeoverPatience time.Duration
	// ReadAhead is the kernel read-ahead of the mounts (default
	// bdi.DefaultReadAhead; negative: the kernel's own, 128 KiB).
	ReadAhead int64
	// Holder keeps the mounts' descriptors across node plugin restarts;
	// nil: a restarted node plugin remounts (see holder.go).
	Holder Holder
	// Standby keeps a second FUSE process per volume started and waiting,
	// to take the connection over when the serving one dies (standby.go):
	// a faster heal on a busy node, for an idle process's memory.
	Standby bool
}

func (c Config) withDefaults() Config {
	if c.Runner == nil {
		c.Runner = ExecRunner{}
	}
	if c.Kernel == nil {
		c.Kernel = KernelFor(c.Holder)
	}
	if c.Env == nil {
		c.Env = os.Environ()
	}
	if c.Binds == nil {
		c.Binds = func(string) []Bind { return nil }
	}
	def := func(d *time.Duration, v time.Duration) {
		if *d <= 0 {
			*d = v
		}
	}
	def(&c.ReadyTimeout, 60*time.Second)
	def(&c.CheckInterval, 5*time.Second)
	def(&c.CheckTimeout, 10*time.Second)
	def(&c.StopTimeout, 10*time.Second)
	def(&c.MaxHealBackoff, 30*time.Second)
	def(&c.TakeoverPatience, 60*time.Second)
	if c.LogLines <= 0 {
		c.LogLines = 50
	}
	if c.ReadAhead == 0 {
		c.ReadAhead = bdi.DefaultReadAhead
	}
	return c
}

// Manager supervises the FUSE processes of one node: one per staged
// volume.
type Manager struct {
	// constant
	cfg    Config
	ctx    context.Context // the Manager's lifetime: bounds heals
	cancel context.CancelFunc

	mu      sync.Mutex         // guards vols, closed
	vols    map[string]*volume // by volume ID
	closed  bool
	opLocks keyedmutex.Map // serialises Stage/Unstage of one volume

	heals atomic.Int64 // heals of all volumes

	holdDone chan struct{} // closed when holdLoop returned (at once without a Holder)
}

// NewManager validates cfg and returns a Manager.
func NewManager(cfg Config) (*Manager, error) {
	cfg = cfg.withDefaults()
	if cfg.Binary == "" {
		return nil, errors.New("supervisor: no csi-driver binary configured")
	}
	if cfg.CredentialsDir == "" {
		return nil, errors.New("supervisor: no credentials directory configured")
	}
	ctx, cancel := context.WithCancel(context.Background())
	m := &Manager{cfg: cfg, ctx: ctx, cancel: cancel, vols: map[string]*volume{},
		holdDone: make(chan struct{})}
	if cfg.Holder != nil {
		go m.holdLoop()
	} else {
		close(m.holdDone)
	}
	return m, nil
}

// Stage mounts req's staging path, starts its FUSE process, waits (bounded
// by ctx) until it answers, re-binds the volume's published targets
// (Config.Binds) and supervises it until Unstage. Whatever is mounted on
// the staging path is replaced, and a FUSE process an earlier node plugin
// left serving the cache directory is stopped first: Stage is also how a
// restarted node plugin takes its volumes back. A second Stage of the same
// request is a no-op; of a different one, ErrConflict.
func (m *Manager) Stage(ctx context.Context, req Request) error {
	unlock := m.opLocks.Lock(req.VolumeID)
	defer unlock()
	m.mu.Lock()
	closed, v := m.closed, m.vols[req.VolumeID]
	m.mu.Unlock()
	switch {
	case closed:
		return ErrClosed
	case v != nil && v.req.same(req):
		return nil
	case v != nil:
		return fmt.Errorf("%w: %s is staged at %s from %s", ErrConflict, req.VolumeID, v.req.StagingPath, v.req.Spec.SourceURL())
	}
	v = newVolume(req, m.cfg.LogLines)
	if err := m.start(ctx, v, true); err != nil {
		return err
	}
	m.mu.Lock()
	m.vols[req.VolumeID] = v
	m.mu.Unlock()
	go m.watch(v)
	return nil
}

// Unstage stops supervising a volume, unmounts its staging path and stops
// its FUSE process. A volume the Manager does not know is unmounted all
// the same when stagingPath is given (a node plugin restarted and could
// not take it back), and the Holder releases its connection. The cache
// directory stays.
func (m *Manager) Unstage(ctx context.Context, volumeID, stagingPath string) error {
	unlock := m.opLocks.Lock(volumeID)
	defer unlock()
	m.mu.Lock()
	v := m.vols[volumeID]
	m.mu.Unlock()
	if v == nil {
		if stagingPath != "" {
			if err := m.cfg.Kernel.Unmount(ctx, stagingPath); err != nil {
				return err
			}
		}
		m.drop(volumeID)
		return nil
	}
	v.stopOnce.Do(func() { close(v.stop) })
	select {
	case <-v.done: // a heal in progress finished
	case <-ctx.Done():
		return fmt.Errorf("supervisor: unstage %s: waiting for a heal: %w", volumeID, ctx.Err())
	}
	if err := m.teardown(ctx, v); err != nil {
		return err
	}
	m.mu.Lock()
	delete(m.vols, volumeID)
	m.mu.Unlock()
	return nil
}

// Check reports the health of a staged volume (ErrNotStaged if unknown).
func (m *Manager) Check(_ context.Context, volumeID string) (Status, error) {
	m.mu.Lock()
	v := m.vols[volumeID]
	m.mu.Unlock()
	if v == nil {
		return Status{}, fmt.Errorf("%w: %s", ErrNotStaged, volumeID)
	}
	return v.status(), nil
}

// Close stops watching all volumes and releases the Manager's descriptors.
// FUSE processes keep running, mounts stay and so do the Holder's
// descriptors: a node plugin that restarts takes its volumes back with
// Stage (stopping the processes left running, and taking the held
// connections over). Tests that need everything gone Unstage each volume.
func (m *Manager) Close() {
	m.mu.Lock()
	m.closed = true
	vols := make([]*volume, 0, len(m.vols))
	for _, v := range m.vols {
		vols = append(vols, v)
	}
	m.vols = map[string]*volume{}
	m.mu.Unlock()
	m.cancel()
	<-m.holdDone
	for _, v := range vols {
		v.stopOnce.Do(func() { close(v.stop) })
		<-v.done
		if s := v.takeStandby(); s != nil {
			s.release()
		}
		v.mu.Lock()
		if v.fd != nil {
			_ = v.fd.Close()
			v.fd = nil
		}
		v.mu.Unlock()
	}
}

package sut

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"
)

// Default timeouts of the FUSE process life cycle.
const (
	defaultMountTimeout   = 60 * time.Second
	defaultUnmountTimeout = 120 * time.Second
)

// recipe is what differs between the FUSE systems.
type recipe struct {
	name    string
	backend Backend
	// bin is the binary: a name searched in Env.ToolsBin and $PATH, or a
	// path.
	bin, installHint string
	// args builds argv (without argv[0]) for the mount point, the cache
	// directory and the private directory holding files.
	args func(mnt, cache, dir string) []string
	// env is added to the environment; it may hold secrets, so it is never
	// logged. unsetEnv names variables removed for this process.
	env, unsetEnv []string
	// files are written 0600 into the private directory before each mount.
	files map[string][]byte
	// check, when set, runs after the binary is found.
	check func(ctx context.Context, bin string) error
	// note completes Describe with what is not in argv (config files,
	// where the credentials come from), without secrets.
	note string
	// readOnly: the mount refuses changes, so the runner gives the
	// writing phases n/a.
	readOnly bool
}

// fuseSystem runs a FUSE daemon in the foreground as a child process.
type fuseSystem struct {
	// constant
	r                   recipe
	toolsBin            string
	dir, mnt, cache, lg string
	// mountTimeout bounds the wait for the mount to appear,
	// unmountTimeout the wait for the process to exit after SIGTERM.
	mountTimeout, unmountTimeout time.Duration

	child
}

// child is a system's running process, and the peak RSS of all the
// processes it ran.
type child struct {
	mu sync.Mutex
	// guarded by mu
	cmd  *exec.Cmd     // nil when not running
	done chan struct{} // closed when cmd has exited
	peak int64
}

// PID is the running process's, 0 when there is none.
func (c *child) PID() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.cmd == nil {
		return 0
	}
	return c.cmd.Process.Pid
}

// PeakRSS is the largest VmHWM (bytes) seen so far.
func (c *child) PeakRSS() int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.cmd != nil {
		c.samplePeakLocked()
	}
	return c.peak
}

func (c *child) samplePeakLocked() {
	if v, err := PeakRSSOf(c.cmd.Process.Pid); err == nil {
		c.peak = max(c.peak, v)
	}
}

func newFuseSystem(env Env, r recipe) *fuseSystem {
	dir := filepath.Join(env.WorkDir, r.name)
	return &fuseSystem{
		r:        r,
		toolsBin: env.ToolsBin,
		dir:      dir,
		mnt:      filepath.Join(dir, "mnt"),
		cache:    filepath.Join(dir, "cache"),
		lg:       filepath.Join(dir, r.name+".log"),

		mountTimeout:   defaultMountTimeout,
		unmountTimeout: defaultUnmountTimeout,
	}
}

func (s *fuseSystem) Name() string     { return s.r.name }
func (s *fuseSystem) Backend() Backend { return s.r.backend }
func (s *fuseSystem) ReadsOnly() bool  { return s.r.readOnly }

// binary resolves the recipe's binary.
func (s *fuseSystem) binary() (string, error) {
	if p := FindBinary(s.r.bin, s.toolsBin); p != "" {
		return p, nil
	}
	return "", fmt.Errorf("%w: %s not found (install: %s)", ErrUnavailable, s.r.bin, s.r.installHint)
}

func (s *fuseSystem) Check(ctx context.Context) error {
	bin, err := s.binary()
	if err != nil {
		return err
	}
	if _, err := os.Stat("/dev/fuse"); err != nil {
		return fmt.Errorf("%w: /dev/fuse: %v", ErrUnavailable, err)
	}
	if s.r.check != nil {
		return s.r.check(ctx, bin)
	}
	return nil
}

func (s *fuseSystem) Describe() string {
	d := s.r.bin + " " + strings.Join(s.r.args(s.mnt, s.cache, s.dir), " ")
	if s.r.note != "" {
		d += "\n  # " + s.r.note
	}
	return d
}

func (s *fuseSystem) DropCache() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cmd != nil {
		return fmt.Errorf("sut: %s: drop cache while mounted", s.r.name)
	}
	return os.RemoveAll(s.cache)
}

func (s *fuseSystem) Mount(ctx context.Context) (string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cmd != nil {
		return "", fmt.Errorf("sut: %s is already mounted", s.r.name)
	}
	bin, err := s.binary()
	if err != nil {
		return "", err
	}
	if err := s.prepare(); err != nil {
		return "", err
	}
	logf, err := os.OpenFile(s.lg, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return "", err
	}
	defer func() { _ = logf.Close() }() // the child has its own copy
	args := s.r.args(s.mnt, s.cache, s.dir)
	_, _ = fmt.Fprintf(logf, "=== %s mount: %s %s\n", time.Now().Format(time.RFC3339), bin, strings.Join(args, " "))

	cmd := exec.Command(bin, args...)
	cmd.Env = childEnv(os.Environ(), s.r.env, s.r.unsetEnv)
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.Dir = s.dir
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		return "", fmt.Errorf("sut: start %s: %w", s.r.name, err)
	}
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); close(done) }()
	if err := waitMounted(ctx, s.mnt, s.mountTimeout, done); err != nil {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		<-done
		_ = syscall.Unmount(s.mnt, syscall.MNT_DETACH)
		return "", fmt.Errorf("sut: mount %s: %w; log: %s", s.r.name, err, tail(s.lg, 1500))
	}
	s.cmd, s.done = cmd, done
	return s.mnt, nil
}

// prepare creates the private directories and config files, and clears a
// stale mount left by an earlier crash.
func (s *fuseSystem) prepare() error {
	for _, d := range []string{s.dir, s.mnt, s.cache} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			return err
		}
	}
	if t, _ := mountFSType(s.mnt); t != "" {
		_ = syscall.Unmount(s.mnt, syscall.MNT_DETACH)
	}
	for name, content := range s.r.files {
		if err := os.WriteFile(filepath.Join(s.dir, name), content, 0o600); err != nil {
			return err
		}
	}
	return nil
}

// waitMounted polls until a FUSE file system is mounted at mnt.
func waitMounted(ctx context.Context, mnt string, timeout time.Duration, exited <-chan struct{}) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for {
		t, err := mountFSType(mnt)
		if err != nil {
			return err
		}
		if strings.HasPrefix(t, "fuse") {
			return nil
		}
		select {
		case <-exited:
			return errors.New("process exited before mounting")
		case <-ctx.Done():
			return fmt.Errorf("not mounted: %w", ctx.Err())
		case <-tick.C:
		}
	}
}

func (s *fuseSystem) Unmount(ctx context.Context) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cmd == nil {
		return nil
	}
	s.samplePeakLocked()
	cmd, done := s.cmd, s.done
	s.cmd, s.done = nil, nil

	var problem error
	_ = cmd.Process.Signal(syscall.SIGTERM)
	timer := time.NewTimer(s.unmountTimeout)
	defer timer.Stop()
	select {
	case <-done:
	case <-ctx.Done():
		problem = ctx.Err()
	case <-timer.C:
		problem = fmt.Errorf("did not exit %v after SIGTERM", s.unmountTimeout)
	}
	if t, _ := mountFSType(s.mnt); t != "" {
		_ = syscall.Unmount(s.mnt, syscall.MNT_DETACH)
		if problem == nil {
			problem = errors.New("still mounted after the process exited")
		}
	}
	_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) // helpers left in the group
	<-done
	if problem != nil {
		return fmt.Errorf("sut: unmount %s: %w; log: %s", s.r.name, problem, tail(s.lg, 1500))
	}
	return nil
}

// childEnv returns base without the unset names and with extra appended.
func childEnv(base, extra, unset []string) []string {
	out := make([]string, 0, len(base)+len(extra))
	for _, kv := range base {
		name, _, _ := strings.Cut(kv, "=")
		if !slices.Contains(unset, name) {
			out = append(out, kv)
		}
	}
	return append(out, extra...)
}

// tail returns the last n bytes of the file at path.
func tail(path string, n int64) string {
	f, err := os.Open(path)
	if err != nil {
		return "(no log)"
	}
	defer func() { _ = f.Close() }()
	if st, err := f.Stat(); err == nil && st.Size() > n {
		_, _ = f.Seek(-n, io.SeekEnd)
	}
	b, _ := io.ReadAll(f)
	return strings.TrimSpace(string(b))
}

// FindBinary returns the path of name: name itself if it contains a slash,
// else the first executable in toolsBin, then $PATH; "" if none.
func FindBinary(name, toolsBin string) string {
	if strings.Contains(name, "/") {
		if st, err := os.Stat(name); err == nil && !st.IsDir() && st.Mode()&0o111 != 0 {
			return name
		}
		return ""
	}
	if toolsBin != "" {
		p := filepath.Join(toolsBin, name)
		if st, err := os.Stat(p); err == nil && !st.IsDir() && st.Mode()&0o111 != 0 {
			return p
		}
	}
	if p, err := exec.LookPath(name); err == nil {
		return p
	}
	return ""
}

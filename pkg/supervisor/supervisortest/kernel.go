package supervisortest

import (
	"context"
	"fmt"
	"os"
	"sync"

	"golang.org/x/sys/unix"

	"github.com/basin-csi/basin/pkg/mountspec"
	"github.com/basin-csi/basin/pkg/supervisor"
)

// Health is what a fake mount answers to Check.
type Health int

// Health values.
const (
	Healthy Health = iota // Check succeeds
	Broken                // Check fails with supervisor.ErrBroken and ENOTCONN: the connection was aborted
	Failing               // Check fails with supervisor.ErrBroken and EIO: the server answers with errors
	Hung                  // Check waits until its context ends
)

// Mount is one fake mount.
type Mount struct {
	Source   string // "fuse" for FUSE mounts, the bind source otherwise
	ReadOnly bool
	Flags    mountspec.Flags // of a FUSE mount
	Dev      uint64          // device number: one per FUSE mount made
}

// Kernel is a fake supervisor.Kernel: mounts are entries in a table.
type Kernel struct {
	mu      sync.Mutex // guards the fields below
	mounts  map[string]Mount
	health  map[string]Health
	fuse    int // FUSE mounts made
	files   []*os.File
	binds   int
	statfs  unix.Statfs_t
	failNew error
	ra      map[uint64]int64 // read-ahead by device
}

var _ supervisor.Kernel = (*Kernel)(nil)

// NewKernel returns an empty fake kernel.
func NewKernel() *Kernel {
	return &Kernel{mounts: map[string]Mount{}, health: map[string]Health{},
		statfs: unix.Statfs_t{Bsize: 4096, Blocks: 1000, Bfree: 600, Bavail: 600, Files: 100, Ffree: 40}}
}

// MountFUSE implements supervisor.Kernel; the descriptor is /dev/null.
func (k *Kernel) MountFUSE(_ context.Context, target, _ string, flags mountspec.Flags) (*os.File, error) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.failNew != nil {
		return nil, k.failNew
	}
	if _, ok := k.mounts[target]; ok {
		return nil, fmt.Errorf("supervisortest: %s already mounted", target)
	}
	f, err := os.Open(os.DevNull)
	if err != nil {
		return nil, err
	}
	k.files = append(k.files, f)
	k.fuse++
	k.mounts[target] = Mount{Source: "fuse", ReadOnly: flags.ReadOnly, Flags: flags, Dev: uint64(k.fuse)}
	k.health[target] = Healthy
	return f, nil
}

// Unmount implements supervisor.Kernel.
func (k *Kernel) Unmount(_ context.Context, target string) error {
	k.mu.Lock()
	defer k.mu.Unlock()
	delete(k.mounts, target)
	delete(k.health, target)
	return nil
}

// Check implements supervisor.Kernel.
func (k *Kernel) Check(ctx context.Context, target string) error {
	k.mu.Lock()
	_, ok := k.mounts[target]
	h := k.health[target]
	k.mu.Unlock()
	switch {
	case !ok:
		return fmt.Errorf("%w: %s", supervisor.ErrNotMounted, target)
	case h == Broken:
		return fmt.Errorf("%w: %s: %w", supervisor.ErrBroken, target, unix.ENOTCONN)
	case h == Failing:
		return fmt.Errorf("%w: %s: %w", supervisor.ErrBroken, target, unix.EIO)
	case h == Hung:
		<-ctx.Done()
		return fmt.Errorf("%w: %s", supervisor.ErrTimeout, target)
	}
	return nil
}

// Bind implements supervisor.Kernel.
func (k *Kernel) Bind(_ context.Context, source, target string, readOnly bool) error {
	k.mu.Lock()
	defer k.mu.Unlock()
	src, ok := k.mounts[source]
	if !ok {
		return fmt.Errorf("supervisortest: bind source %s not mounted", source)
	}
	k.mounts[target] = Mount{Source: source, ReadOnly: readOnly, Dev: src.Dev}
	k.health[target] = Healthy
	k.binds++
	return nil
}

// Statfs implements supervisor.Kernel with fixed figures of a FUSE file
// system. As the kernel does, a directory nothing is mounted on answers
// with its own file system's figures (a tmpfs here).
func (k *Kernel) Statfs(_ context.Context, path string) (unix.Statfs_t, error) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if _, ok := k.mounts[path]; !ok {
		if fi, err := os.Stat(path); err != nil || !fi.IsDir() {
			return unix.Statfs_t{}, fmt.Errorf("supervisortest: %s not mounted", path)
		}
		return unix.Statfs_t{Type: unix.TMPFS_MAGIC, Bsize: 4096, Blocks: 1 << 20, Bfree: 1 << 19, Bavail: 1 << 19, Files: 1 << 16, Ffree: 1 << 15}, nil
	}
	if k.health[path] != Healthy {
		return unix.Statfs_t{}, fmt.Errorf("%w: %s", supervisor.ErrBroken, path)
	}
	st := k.statfs
	st.Type = unix.FUSE_SUPER_MAGIC
	return st, nil
}

// MountDev implements supervisor.Kernel.
func (k *Kernel) MountDev(_ context.Context, target string) (uint64, error) {
	k.mu.Lock()
	defer k.mu.Unlock()
	m, ok := k.mounts[target]
	if !ok {
		return 0, fmt.Errorf("%w: %s", supervisor.ErrNotMounted, target)
	}
	return m.Dev, nil
}

// SetReadAhead implements supervisor.Kernel.
func (k *Kernel) SetReadAhead(dev uint64, bytes int64) error {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.ra == nil {
		k.ra = map[uint64]int64{}
	}
	k.ra[dev] = bytes
	return nil
}

// ReadAhead returns the read-ahead set on dev (0: never set).
func (k *Kernel) ReadAhead(dev uint64) int64 {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.ra[dev]
}

// SetHealth sets what Check on target answers.
func (k *Kernel) SetHealth(target string, h Health) {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.health[target] = h
}

// FailMounts makes every later MountFUSE fail with err (nil: succeed).
func (k *Kernel) FailMounts(err error) {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.failNew = err
}

// Mounted returns the mount at target.
func (k *Kernel) Mounted(target string) (Mount, bool) {
	k.mu.Lock()
	defer k.mu.Unlock()
	m, ok := k.mounts[target]
	return m, ok
}

// Counts returns the FUSE mounts and binds made so far.
func (k *Kernel) Counts() (fuse, binds int) {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.fuse, k.binds
}

package suttest

import (
	"context"
	"fmt"
	"sync"

	"github.com/basin-csi/basin/bench/sut"
)

// Fake "mounts" an existing directory: Mount returns Root. It counts calls
// and can be told to be unavailable or to fail mounts. Safe for concurrent
// use.
type Fake struct {
	// constant after construction
	name, root string
	backend    sut.Backend

	mu sync.Mutex
	// guarded by mu
	unavailable error
	mountErr    error
	readOnly    bool
	mounted     bool
	mounts      int
	unmounts    int
	drops       int
}

// New returns a fake named name over the directory root.
func New(name, root string, backend sut.Backend) *Fake {
	return &Fake{name: name, root: root, backend: backend}
}

// SetUnavailable makes Check fail with err wrapped in sut.ErrUnavailable.
func (f *Fake) SetUnavailable(why string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.unavailable = fmt.Errorf("%w: %s", sut.ErrUnavailable, why)
}

// SetReadOnly makes the fake a read-only system (sut.ReadsOnly).
func (f *Fake) SetReadOnly() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.readOnly = true
}

// ReadsOnly reports whether SetReadOnly was called.
func (f *Fake) ReadsOnly() bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.readOnly
}

// SetMountError makes every later Mount fail with err (nil clears it).
func (f *Fake) SetMountError(err error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.mountErr = err
}

// Counts returns how many Mount, Unmount (of a mounted fake) and
// DropCache calls were made.
func (f *Fake) Counts() (mounts, unmounts, drops int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.mounts, f.unmounts, f.drops
}

// Name implements sut.System.
func (f *Fake) Name() string { return f.name }

// Backend implements sut.System.
func (f *Fake) Backend() sut.Backend { return f.backend }

// Check implements sut.System.
func (f *Fake) Check(context.Context) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.unavailable
}

// Describe implements sut.System.
func (f *Fake) Describe() string { return "fake " + f.root }

// Mount implements sut.System.
func (f *Fake) Mount(context.Context) (string, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.mounted {
		return "", fmt.Errorf("suttest: %s already mounted", f.name)
	}
	if f.mountErr != nil {
		return "", f.mountErr
	}
	f.mounted = true
	f.mounts++
	return f.root, nil
}

// Unmount implements sut.System.
func (f *Fake) Unmount(context.Context) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.mounted {
		f.unmounts++
	}
	f.mounted = false
	return nil
}

// PID implements sut.System.
func (f *Fake) PID() int { return 0 }

// PeakRSS implements sut.System: a fixed 1 MiB, so reports show a value.
func (f *Fake) PeakRSS() int64 { return 1 << 20 }

// DropCache implements sut.System.
func (f *Fake) DropCache() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.mounted {
		return fmt.Errorf("suttest: %s: drop cache while mounted", f.name)
	}
	f.drops++
	return nil
}

var _ sut.System = (*Fake)(nil)

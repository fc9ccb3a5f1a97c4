package sut

import (
	"context"
	"fmt"
	"os"
)

// Local is the ceiling: the data sets in a plain local directory.
type Local struct{ root string }

// NewLocal returns the ceiling system over env.LocalRoot.
func NewLocal(env Env) *Local { return &Local{root: env.LocalRoot} }

// Name implements System.
func (l *Local) Name() string { return "local" }

// Backend implements System.
func (l *Local) Backend() Backend { return BackendLocal }

// Check implements System.
func (l *Local) Check(context.Context) error {
	if st, err := os.Stat(l.root); err != nil || !st.IsDir() {
		return fmt.Errorf("%w: local root %s: %v", ErrUnavailable, l.root, err)
	}
	return nil
}

// Describe implements System.
func (l *Local) Describe() string {
	return "plain directory " + l.root + " (page cache dropped for cold phases)"
}

// Mount implements System.
func (l *Local) Mount(context.Context) (string, error) { return l.root, nil }

// Unmount implements System.
func (l *Local) Unmount(context.Context) error { return nil }

// PID implements System.
func (l *Local) PID() int { return 0 }

// PeakRSS implements System.
func (l *Local) PeakRSS() int64 { return 0 }

// DropCache implements System: a local directory has no cache of its own
// (the runner drops the page cache).
func (l *Local) DropCache() error { return nil }

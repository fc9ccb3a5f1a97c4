package scenario

import (
	"context"
	"errors"
	"math/rand/v2"
	"os"
	"syscall"
	"time"
)

// Measure is the outcome of one timed workload.
type Measure struct {
	// Bytes moved (read or written).
	Bytes int64 `json:"bytes"`
	// Files is the number of files read or written, or entries visited.
	Files int64 `json:"files"`
	// Elapsed is the wall time of the timed part.
	Elapsed time.Duration `json:"elapsed_ns"`
	// Partial is set when the deadline stopped the workload early.
	Partial bool `json:"partial,omitempty"`
}

// MBps is the throughput in MB/s (10^6 bytes).
func (m Measure) MBps() float64 {
	if m.Elapsed <= 0 {
		return 0
	}
	return float64(m.Bytes) / 1e6 / m.Elapsed.Seconds()
}

// FilesPerSec is the file (or entry) rate.
func (m Measure) FilesPerSec() float64 {
	if m.Elapsed <= 0 {
		return 0
	}
	return float64(m.Files) / m.Elapsed.Seconds()
}

// Stopped classifies the end of a workload: a passed deadline makes the
// measure partial, a cancellation is an error.
func Stopped(ctx context.Context, m *Measure) error {
	switch {
	case ctx.Err() == nil:
		return nil
	case errors.Is(ctx.Err(), context.DeadlineExceeded):
		m.Partial = true
		return nil
	default:
		return ctx.Err()
	}
}

// Shuffled returns a copy of items in a random order fixed by seed, so every
// system reads the same sequence in the same phase.
func Shuffled[T any](items []T, seed uint64) []T {
	out := append([]T(nil), items...)
	rng := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	rng.Shuffle(len(out), func(i, j int) { out[i], out[j] = out[j], out[i] })
	return out
}

// DropCaches writes back dirty pages and drops the page, dentry and inode
// caches, so the next read comes from the file system's own storage.
func DropCaches() error {
	syscall.Sync()
	return os.WriteFile("/proc/sys/vm/drop_caches", []byte("3"), 0o200)
}

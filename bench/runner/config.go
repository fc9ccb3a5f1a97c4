package runner

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/basin-csi/basin/bench/dataset"
	"github.com/basin-csi/basin/bench/scenario"
	"github.com/basin-csi/basin/bench/sut"
	"github.com/basin-csi/basin/bench/wanproxy"
)

// ErrInvalidConfig reports an unusable Config.
var ErrInvalidConfig = errors.New("runner: invalid configuration")

// Sets are the data sets the scenarios read and write.
type Sets struct {
	Small      dataset.Set
	Checkpoint dataset.Set
	Tree       dataset.Set
	// Write is what the write scenario writes (a checkpoint-like set).
	Write dataset.Set
	// Create is what the create scenario creates (small files in
	// directories, never in the bucket before).
	Create dataset.Set
	// Images is the ImageFolder of JPEGs of scenario 8.
	Images dataset.Set
}

// Config tunes the scenarios.
type Config struct {
	Sets Sets
	// Threads read the small-file epoch (the issue: 8).
	Threads int
	// RandThreads, RandReads and RandSize shape the random-read scenario
	// (the issue: 16 threads, 1 MiB).
	RandThreads int
	RandReads   int
	RandSize    int64
	// RandWarmPasses is how many times the warm phase reads the cold
	// phase's ranges, each pass in an order of its own: one pass of the
	// full run's 1 GiB took 0.16–0.28 s, too short to tell two systems
	// apart.
	RandWarmPasses int
	// PhaseTimeout bounds every timed phase.
	PhaseTimeout time.Duration
	// VerifySample is how many small files are checked byte for byte
	// after the cold epoch.
	VerifySample int
	// Torch runs the DataLoader scenario; TorchUnavailable, when set, says
	// why it cannot (the cells become n/a).
	Torch            scenario.TorchConfig
	TorchUnavailable string
	// ImagesUnavailable, when set, says why the ImageFolder scenario
	// cannot run (no torchvision).
	ImagesUnavailable string
	// Scenarios selects the scenarios played, by number (1–8); empty
	// plays all. The cells of the others are n/a.
	Scenarios []int
}

// Validate checks the config.
func (c Config) Validate() error {
	for _, s := range []dataset.Set{c.Sets.Small, c.Sets.Checkpoint, c.Sets.Tree, c.Sets.Write, c.Sets.Create, c.Sets.Images} {
		if err := s.Validate(); err != nil {
			return fmt.Errorf("%w: %w", ErrInvalidConfig, err)
		}
	}
	if c.Threads <= 0 || c.RandThreads <= 0 || c.RandReads <= 0 || c.RandSize <= 0 || c.RandWarmPasses <= 0 || c.PhaseTimeout <= 0 {
		return fmt.Errorf("%w: threads, random reads, warm passes and phase timeout must be positive", ErrInvalidConfig)
	}
	for _, n := range c.Scenarios {
		if n < 1 || n > NumScenarios {
			return fmt.Errorf("%w: scenario %d is not one of 1–%d", ErrInvalidConfig, n, NumScenarios)
		}
	}
	if c.RandSize > c.Sets.Checkpoint.FileSize {
		return fmt.Errorf("%w: random read size %d exceeds the checkpoint shard size", ErrInvalidConfig, c.RandSize)
	}
	return nil
}

// Hooks connect the runner to the benchmark's environment.
type Hooks struct {
	// Traffic returns the cumulative proxy counters of a backend (nil for
	// BackendLocal).
	Traffic func(sut.Backend) wanproxy.Snapshot
	// Durable returns the bucket-side check of written files for a
	// backend, nil when closing a file is enough (local).
	Durable func(sut.Backend) scenario.Durable
	// Scenario is told the number of the scenario a system plays next,
	// before it cleans or mounts anything for it; an error fails the
	// scenario's cells. Nil: nothing to prepare.
	Scenario func(ctx context.Context, n int) error
	// Clean deletes what an earlier run wrote under prefix (a directory
	// relative to the mount root) for the system.
	Clean func(ctx context.Context, sys sut.System, prefix string) error
	// StorePID returns the PID of a backend's object-store server when it
	// runs on this machine, 0 otherwise; its CPU time goes into each cell.
	StorePID func(sut.Backend) int
	// DropCaches drops the kernel's page, dentry and inode caches.
	DropCaches func() error
	// CacheDisk tells the room on the disk the systems' caches are on;
	// nil skips the room check (room.go).
	CacheDisk func() (DiskRoom, error)
	// Logf reports progress.
	Logf func(format string, args ...any)
}

package main

import (
	"context"
	"os"
	"runtime/debug"
	"time"

	"github.com/basin-csi/basin/pkg/cache"
)

// The FUSE process's garbage collector. While the cache holds the block
// buffers of fetches (off the Go heap, up to 128 MiB; more than the two
// that verifications after a remount hold), the heap may grow only half
// its live size between collections instead of the whole (GOGC 50 instead
// of 100): its live part is then mostly go-fuse's 1 MiB buffers of the
// READs in flight, and the default let buffers and heap together take the
// process above the 256 MiB peak RSS budget with 16 random readers. With
// no buffers held (warm reads, opens after a remount) the default stays,
// where GOGC 50 cost 5% of the FUSE process's CPU (docs/architecture.md
// "Peak RSS of the FUSE process"). A GOGC in the environment wins.
const (
	gcPercentBuffers = 50
	gcPercentIdle    = 100
	gcBuffersAbove   = 16 << 20 // four 4 MiB blocks
	gcCheckEvery     = 100 * time.Millisecond
)

// tuneMountGC follows c's block buffers with the GC percentage until ctx
// ends.
func tuneMountGC(ctx context.Context, c *cache.Cache) {
	if os.Getenv("GOGC") != "" {
		return
	}
	t := time.NewTicker(gcCheckEvery)
	defer t.Stop()
	current := gcPercentIdle
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		if want := gcPercentFor(c.Stats().BufferBytes); want != current {
			debug.SetGCPercent(want)
			current = want
		}
	}
}

// gcPercentFor is the GC percentage while the cache's block buffers take
// buffers bytes.
func gcPercentFor(buffers int64) int {
	if buffers > gcBuffersAbove {
		return gcPercentBuffers
	}
	return gcPercentIdle
}

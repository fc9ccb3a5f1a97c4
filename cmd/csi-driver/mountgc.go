package main

import (
	"context"
	"os"
	"runtime/debug"
	"runtime/metrics"
	"time"

	"github.com/basin-csi/basin/pkg/cache"
)

// The FUSE process's garbage collector. The process's peak RSS is its
// binary's text (about 50 MiB), the cache index's mapping, the cache's
// block buffers (off the Go heap, up to the bufferSize setting, 128 MiB by
// default) and the Go heap, which the default GOGC of 100 lets grow to
// twice its live part between collections. With 16 random readers (live
// heap mostly go-fuse's 1 MiB READ buffers, plus a full pool) or 100,000
// files walked (live heap the nodes) that took the process above the 256
// MiB budget. So the GC percentage is chosen so that the heap's growth and
// the buffers fit in the budget (the buffers' bound: by default 128 MiB,
// which with the binary and the index keeps the process within 256 MiB)
// beside the live heap: between 50 and 100, at 100 whenever they fit (warm
// reads, opens after a remount), where a fixed 50 cost 5% of the FUSE
// process's CPU after a remount (docs/architecture.md "Peak RSS of the
// FUSE process"). While the block buffers alone take half the budget (cold
// reads of large files) the floor is 25: 16 random readers with a full
// pool peaked at 257–259 MiB with the floor at 50 and 238–246 MiB with it
// at 25, as fast (docs/architecture.md, "Measured and tried after the
// evening run").
// A live heap beyond the budget on its own (millions of nodes) keeps the
// floor of 50, where each collection costs the most. A GOGC in the
// environment wins.
const (
	gcPercentMin        = 50
	gcPercentMinBuffers = 25
	gcPercentMax        = 100
	gcCheckEvery        = 100 * time.Millisecond
)

// tuneMountGC follows c's block buffers and the live heap with the GC
// percentage until ctx ends.
func tuneMountGC(ctx context.Context, c *cache.Cache) {
	if os.Getenv("GOGC") != "" {
		return
	}
	t := time.NewTicker(gcCheckEvery)
	defer t.Stop()
	live := []metrics.Sample{{Name: "/gc/heap/live:bytes"}}
	current := gcPercentMax
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		metrics.Read(live)
		if live[0].Value.Kind() != metrics.KindUint64 {
			return // not this runtime's metric: keep the default
		}
		want := gcPercentFor(int64(live[0].Value.Uint64()), c.BufferBytes(), c.BufferBudget())
		if want != current {
			debug.SetGCPercent(want)
			current = want
		}
	}
}

// gcPercentFor is the GC percentage that lets a live heap of live bytes
// grow, beside buffers bytes of block buffers, to budget, within
// [gcPercentMin, gcPercentMax] (the floor gcPercentMinBuffers while the
// buffers take half the budget), in steps of 10.
func gcPercentFor(live, buffers, budget int64) int {
	if live <= 0 {
		return gcPercentMax
	}
	floor := int64(gcPercentMin)
	if buffers >= budget/2 {
		floor = gcPercentMinBuffers
	}
	p := (budget - buffers - live) * 100 / live
	p = p / 10 * 10
	return int(min(max(p, floor), gcPercentMax))
}

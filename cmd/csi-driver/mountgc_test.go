package main

import (
	"testing"

	"github.com/basin-csi/basin/pkg/cache"
)

// TestGCPercentFor: the collector keeps its default while the heap's
// growth and the block buffers fit in the budget, and tightens down to
// its floor as they fill it: 25 while the buffers take half the budget,
// else 50.
func TestGCPercentFor(t *testing.T) {
	const mib = 1 << 20
	for _, tc := range []struct {
		name          string
		live, buffers int64
		want          int
	}{
		{"nothing measured yet", 0, 0, gcPercentMax},
		{"small heap, verification buffers", 30 * mib, 8 * mib, gcPercentMax},
		{"fits exactly", 64 * mib, 0, gcPercentMax},
		{"100,000 nodes", 72 * mib, 0, 70},
		{"random readers beside a pool of 84 MiB", 50 * mib, 84 * mib, gcPercentMinBuffers},
		{"a full pool of 128 MiB", 30 * mib, 128 * mib, gcPercentMinBuffers},
		{"verification buffers below half the budget", 70 * mib, 32 * mib, gcPercentMin},
		{"live heap beyond the budget", 200 * mib, 0, gcPercentMin},
	} {
		if got := gcPercentFor(tc.live, tc.buffers, cache.DefaultBufferSize); got != tc.want {
			t.Errorf("%s: gcPercentFor(%d MiB, %d MiB) = %d, want %d", tc.name, tc.live/mib, tc.buffers/mib, got, tc.want)
		}
	}
	// A volume given 1 GiB of buffers gives the heap room beside them too.
	if got := gcPercentFor(100*mib, 512*mib, 1<<30); got != gcPercentMax {
		t.Errorf("1 GiB budget, half of it buffers: gcPercentFor = %d, want %d", got, gcPercentMax)
	}
	if got := gcPercentFor(100*mib, 900*mib, 1<<30); got != gcPercentMinBuffers {
		t.Errorf("1 GiB budget, nearly full of buffers: gcPercentFor = %d, want %d", got, gcPercentMinBuffers)
	}
}

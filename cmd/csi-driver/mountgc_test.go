package main

import "testing"

// TestGCPercentFor: the collector tightens only while fetch buffers are
// held, not for the two buffers of verifications after a remount.
func TestGCPercentFor(t *testing.T) {
	for _, tc := range []struct {
		buffers int64
		want    int
	}{
		{0, gcPercentIdle},
		{2 * 4 << 20, gcPercentIdle},
		{gcBuffersAbove, gcPercentIdle},
		{gcBuffersAbove + 4<<20, gcPercentBuffers},
		{128 << 20, gcPercentBuffers},
	} {
		if got := gcPercentFor(tc.buffers); got != tc.want {
			t.Errorf("gcPercentFor(%d MiB) = %d, want %d", tc.buffers>>20, got, tc.want)
		}
	}
}

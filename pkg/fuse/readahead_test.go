package fuse

import (
	"context"
	"github.com/basin-csi/basin/pkg/mountspec"
	"testing"

	"github.com/basin-csi/basin/pkg/objstore/objstoretest"
)

func TestSeqDetector(t *testing.T) {
	const (
		minW = 4 << 20
		maxW = 32 << 20
		req  = 128 << 10
		size = 1 << 30
	)
	type read struct{ off, n int64 }
	seq := func(from, count int64) []read {
		var rs []read
		for i := int64(0); i < count; i++ {
			rs = append(rs, read{from + i*req, req})
		}
		return rs
	}
	for _, tc := range []struct {
		name          string
		max           int64
		limit         int64 // the cache's PrefetchWindow; 0: none
		reads         []read
		wantPrefetch  bool
		wantMaxWindow int64 // largest window reached
		wantAheadMin  int64 // prefetch frontier at least here
	}{
		{name: "sequential from 0 grows to the cap", max: maxW, reads: seq(0, 2000), wantPrefetch: true, wantMaxWindow: maxW, wantAheadMin: 2000 * req},
		{name: "sequential from the middle", max: maxW, reads: seq(100<<20, 200), wantPrefetch: true, wantMaxWindow: maxW},
		{name: "random reads never prefetch", max: maxW, reads: []read{{500 << 20, req}, {3 << 20, req}, {900 << 20, req}, {10 << 20, req}, {700 << 20, req}}},
		{name: "disabled", max: -1, reads: seq(0, 100)},
		{name: "prefetch stops at the end of the object", max: maxW, reads: seq(size-20*req, 20), wantPrefetch: true},
		{name: "random reads split into requests never prefetch", max: maxW, reads: []read{
			{500 << 20, 548 << 10}, {500<<20 + 548<<10, 476 << 10},
			{3 << 20, 1 << 20}, {4 << 20, 1 << 20}, // a 1 MiB pread at 3 MiB + 4 KiB
			{3 << 20, 1 << 20},
			{900<<20 + 4<<10, 100 << 10}, {900<<20 + 104<<10, 924 << 10},
		}},
		{name: "the cache's window caps it below max", max: maxW, limit: 8 << 20, reads: seq(0, 2000), wantPrefetch: true, wantMaxWindow: 8 << 20, wantAheadMin: 2000 * req},
		{name: "a cache window below min caps the first window", max: maxW, limit: 2 << 20, reads: seq(0, 100), wantPrefetch: true, wantMaxWindow: 2 << 20},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := newSeqDetector(minW, tc.max, 8<<20)
			var prefetched bool
			var maxWindow int64
			for _, r := range tc.reads {
				off, n := d.observe(r.off, r.n, size, tc.limit)
				if n > 0 {
					prefetched = true
					if off < r.off+r.n || off+n > size {
						t.Fatalf("prefetch [%d,+%d) after read [%d,+%d): behind the reader or past the end", off, n, r.off, r.n)
					}
				}
				maxWindow = max(maxWindow, d.window)
			}
			if prefetched != tc.wantPrefetch {
				t.Errorf("prefetched = %v, want %v", prefetched, tc.wantPrefetch)
			}
			if tc.wantMaxWindow != 0 && maxWindow != tc.wantMaxWindow {
				t.Errorf("largest window %d, want %d", maxWindow, tc.wantMaxWindow)
			}
			if d.ahead < tc.wantAheadMin {
				t.Errorf("prefetched up to %d, want at least %d", d.ahead, tc.wantAheadMin)
			}
		})
	}
}

// TestSeqDetectorFollowsTheCacheWindow checks that the window grows when
// the cache's window grows during a run (the fetch tuner raised its
// limit) and stops short of it.
func TestSeqDetectorFollowsTheCacheWindow(t *testing.T) {
	const (
		step = 8 << 20
		req  = 1 << 20
	)
	d := newSeqDetector(2*step, 1<<30, step)
	limit := int64(32 << 20)
	var largest int64
	for off := int64(0); off < 1<<30; off += req {
		if off == 256<<20 {
			limit = 128 << 20
		}
		d.observe(off, req, 2<<30, limit)
		if d.window > limit {
			t.Fatalf("window %d MiB above the cache's %d MiB", d.window>>20, limit>>20)
		}
		largest = max(largest, d.window)
		if off < 256<<20 && d.ahead-off > 32<<20+req {
			t.Fatalf("prefetched %d MiB ahead under a 32 MiB window", (d.ahead-off)>>20)
		}
	}
	if largest != 128<<20 {
		t.Errorf("largest window %d MiB, want the cache's raised 128 MiB", largest>>20)
	}
}

func TestSeqDetectorToleratesReordering(t *testing.T) {
	// Kernel readahead sends concurrent requests that arrive out of order.
	d := newSeqDetector(4<<20, 64<<20, 8<<20)
	const req = 128 << 10
	var calls int
	for base := int64(0); base < 64<<20; base += 4 * req {
		for _, i := range []int64{1, 0, 3, 2} {
			if _, n := d.observe(base+i*req, req, 1<<30, 0); n > 0 {
				calls++
			}
		}
		if d.window == 0 {
			t.Fatalf("run broken at %d by reordered reads", base)
		}
	}
	if calls == 0 || calls > 16 {
		t.Errorf("%d prefetch calls for 64 MiB read in 128 KiB requests; want a few growing ones", calls)
	}
}

// TestReadIssuesPrefetch checks the handle passes the detector's decision
// to the cache.
func TestReadIssuesPrefetch(t *testing.T) {
	store := objstoretest.NewFake()
	put(t, store, "f", randomBytes(64<<20, 4))
	c := newFakeCache(store, t.TempDir(), 0, 0, true)
	fsys, err := newFS(Config{Spec: mountspec.Spec{ReadAhead: DefaultReadAhead}}, store, c)
	if err != nil {
		t.Fatal(err)
	}
	info, _ := store.Stat(context.Background(), "f")
	oh, _ := c.OpenObject(context.Background(), info)
	h := &readHandle{node: &fileNode{fsys: fsys}, oh: oh, det: newSeqDetector(MinPrefetch, fsys.cfg.ReadAhead, prefetchStep)}
	buf := make([]byte, 1<<20)
	for off := int64(0); off < 32<<20; off += int64(len(buf)) {
		if _, errno := h.Read(context.Background(), buf, off); errno != 0 {
			t.Fatal(errno)
		}
	}
	if n := oh.(*fakeHandle).prefetches.Load(); n == 0 {
		t.Error("a sequential reader caused no Prefetch")
	}
}

// TestSeqDetectorKeepsTheWindowFull checks the top-up rule: once the
// window is at its cap, the prefetch frontier never falls more than one
// step (one ranged GET) and one request behind a full window, so a fetch
// slot freed by a completed part gets the next part at once.
func TestSeqDetectorKeepsTheWindowFull(t *testing.T) {
	const (
		step = 8 << 20
		maxW = 64 << 20
		req  = 1 << 20
	)
	d := newSeqDetector(2*step, maxW, step)
	for off := int64(0); off < 512<<20; off += req {
		d.observe(off, req, 1<<30, 0)
		if end := off + req; d.window == maxW && d.ahead-end < maxW-step-req {
			t.Fatalf("after reading to %d MiB the frontier is %d MiB ahead, want at least %d",
				end>>20, (d.ahead-end)>>20, (maxW-step-req)>>20)
		}
	}
	if d.window != maxW {
		t.Fatalf("window %d, want the cap %d", d.window, maxW)
	}
}

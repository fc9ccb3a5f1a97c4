package cache

import (
	"context"
	"fmt"
	"io"
	"os"
	"testing"
	"time"

	"github.com/basin-csi/basin/pkg/objstore"
	"github.com/basin-csi/basin/pkg/objstore/objstoretest"
)

// coldSeqSize is the object BenchmarkColdSequential reads: large enough
// that the reader runs in steady state for a second or more.
const coldSeqSize = 1 << 30

// BenchmarkColdSequential is the cold-read goal as a benchmark: one
// sequential reader of a 1 GiB object through an empty cache (production
// tuning), in 1 MiB reads with the FUSE layer's read-ahead pattern,
// against a plain download of the same object from the same store with 8
// parallel 8 MiB ranged GETs into memory. Every iteration runs both, in
// alternating order, so both see the same machine noise; "cache/ranged"
// is the ratio of their total throughputs (goal >= 0.9), "worst-ratio"
// that of the worst iteration.
//
// Sub-benchmarks: "loopback" is MinIO on this machine (CPU-bound on two
// cores: the cache's extra work, CRC, copy to the reader and the data
// file write, shows); "s3like" adds 20 ms to the first byte of every GET
// and caps each connection at 100 MB/s (network-bound: the parallelism
// of the read-ahead shows). "fuse" is pkg/fuse's detector (a window of
// 16 MiB doubling to 64 MiB, topped up as soon as one part of it is
// free); "half" is the one it replaced (4 MiB, topped up when the reader
// has consumed half of the window).
//
//	go test -run '^$' -bench ColdSequential -benchtime 6x ./pkg/cache/
func BenchmarkColdSequential(b *testing.B) {
	minio := minioStore(b)
	info := put(b, minio, "cold-seq", randBytes(78, coldSeqSize))
	s3like := shapedStore{Store: minio, ttfb: 20 * time.Millisecond, bytesPerSec: 100e6}
	for _, bc := range []struct {
		name  string
		store objstore.Store
		ra    readAhead
	}{
		{"loopback/fuse", minio, fuseReadAhead},
		{"loopback/half", minio, halfReadAhead},
		{"s3like/fuse", s3like, fuseReadAhead},
		{"s3like/half", s3like, halfReadAhead},
	} {
		b.Run(bc.name, func(b *testing.B) { benchColdSequential(b, bc.store, info, bc.ra) })
	}
}

func benchColdSequential(b *testing.B, store objstore.Store, info objstore.ObjectInfo, ra readAhead) {
	ctx := context.Background()
	root := b.TempDir()
	ranged := func() time.Duration {
		start := time.Now()
		if err := objstoretest.RangedDownload(ctx, store, info, DefaultPartSize, DefaultMaxParallelFetches, nil); err != nil {
			b.Fatal(err)
		}
		return time.Since(start)
	}
	i := 0
	cached := func() time.Duration {
		dir := fmt.Sprintf("%s/%d", root, i)
		opts := Options{VolumeID: "bench", Origin: "s3://minio/", MinFreeRatio: -1}
		c, err := open(ctx, dir, store, opts, defaultTuning())
		if err != nil {
			b.Fatal(err)
		}
		h := openObj(b, c, info)
		start := time.Now()
		n := seqReadAhead(b, h, 1*mib, ra)
		d := time.Since(start)
		if n != info.Size {
			b.Fatalf("read %d bytes of %d", n, info.Size)
		}
		_ = h.Close()
		if err := c.Close(); err != nil {
			b.Fatal(err)
		}
		if err := os.RemoveAll(dir); err != nil {
			b.Fatal(err)
		}
		return d
	}
	ranged() // warm the store's own page cache so both read the same
	var tr, tc time.Duration
	worst := 10.0
	for b.Loop() {
		var r, c time.Duration
		if i%2 == 0 {
			r, c = ranged(), cached()
		} else {
			c, r = cached(), ranged()
		}
		tr, tc = tr+r, tc+c
		worst = min(worst, float64(r)/float64(c))
		b.Logf("iteration %d: ranged %.0f MB/s, cache %.0f MB/s, ratio %.2f", i,
			mbps(info.Size, r), mbps(info.Size, c), float64(r)/float64(c))
		i++
	}
	n := int64(i)
	b.ReportMetric(mbps(n*info.Size, tr), "ranged-MB/s")
	b.ReportMetric(mbps(n*info.Size, tc), "cache-MB/s")
	b.ReportMetric(float64(tr)/float64(tc), "cache/ranged")
	b.ReportMetric(worst, "worst-ratio")
}

func mbps(n int64, d time.Duration) float64 { return float64(n) / d.Seconds() / 1e6 }

// readAhead decides, before a read ending at end, whether to grow the
// prefetch window (up to max) given what was prefetched up to ahead.
type readAhead func(window, ahead, end, max int64) (newWindow int64, prefetch bool)

// fuseReadAhead is pkg/fuse's seqDetector: a 16 MiB first window, doubled
// (up to max) each time the reader has consumed half of what was
// prefetched or one part of it, so that a reader waiting for the oldest
// part does not leave fetch slots idle.
func fuseReadAhead(window, ahead, end, maxWin int64) (int64, bool) {
	switch {
	case window == 0:
		return 2 * DefaultPartSize, true
	case ahead-end < window/2 || ahead-end <= window-DefaultPartSize:
		return min(2*window, maxWin), true
	}
	return window, false
}

// halfReadAhead is the detector pkg/fuse had before, for comparison: 4 MiB
// first, doubled only when the reader has consumed half of the window.
func halfReadAhead(window, ahead, end, maxWin int64) (int64, bool) {
	switch {
	case window == 0:
		return 4 * mib, true
	case ahead-end < window/2:
		return min(2*window, maxWin), true
	}
	return window, false
}

// seqReadAhead reads h from start to end in chunk-sized ReadAt calls and,
// before each, prefetches as ra says, with windows up to 64 MiB (pkg/fuse's
// default read-ahead). It returns the bytes read.
func seqReadAhead(b *testing.B, h *Handle, chunk int, ra readAhead) int64 {
	ctx := context.Background()
	size := h.Info().Size
	buf := make([]byte, chunk)
	var window, ahead, off int64
	for off < size {
		end := min(off+int64(chunk), size)
		var grow bool
		window, grow = ra(window, ahead, end, 64*mib)
		if from, to := max(ahead, end), min(end+window, size); grow && to > from {
			h.Prefetch(from, to-from)
			ahead = to
		}
		n, err := h.ReadAt(ctx, buf, off)
		if err != nil && err != io.EOF {
			b.Fatalf("ReadAt(%d): %v", off, err)
		}
		off += int64(n)
	}
	return off
}

package cache

import (
	"bytes"
	"context"
	"io"
	"sync/atomic"
	"testing"
	"time"

	"github.com/basin-csi/basin/pkg/objstore"
)

// TestMinIOSequentialReadRaisesFetchParallelism reads a large object from
// MinIO sequentially, prefetching ahead as the FUSE layer does, over GETs
// of 4 MB/s each: the fetch tuner must raise the GETs in flight beyond
// the initial 2 and never past MaxParallelFetches.
func TestMinIOSequentialReadRaisesFetchParallelism(t *testing.T) {
	for _, bound := range []int{12, 3} {
		store := shapedStore{Store: minioStore(t), bytesPerSec: 4e6} // one connection of a slow link per GET
		opts := testOpts()
		opts.Origin = "s3://minio/"
		opts.CacheBlockSize, opts.PartSize, opts.SmallObjectSize = mib, mib, mib
		opts.MaxParallelFetches = bound
		c := openTuned(t, store, opts)
		data := randBytes(77, 40*mib)
		info := put(t, store, "big", data)
		h, err := c.OpenObject(context.Background(), info)
		if err != nil {
			t.Fatal(err)
		}
		got := readSequentially(t, h, len(data))
		_ = h.Close()
		st := c.Stats()
		_ = c.Close()
		if !bytes.Equal(got, data) {
			t.Fatalf("bound %d: read back wrong bytes", bound)
		}
		t.Logf("bound %d: limit %d, peak %d GETs in flight", bound, st.FetchLimit, st.FetchesPeak)
		if st.FetchesPeak > int64(bound) || st.FetchLimit > int64(bound) {
			t.Errorf("bound %d: limit %d, peak %d: past the bound", bound, st.FetchLimit, st.FetchesPeak)
		}
		if want := min(int64(bound), 4); st.FetchesPeak < want || st.FetchLimit < want {
			t.Errorf("bound %d: limit %d, peak %d; want both raised to at least %d from 2", bound, st.FetchLimit, st.FetchesPeak, want)
		}
	}
}

// TestMinIOBufferSizeBoundsASequentialRead reads a large object from MinIO
// the way a sequential reader behind the FUSE layer's read-ahead does,
// with bufferSize 16 MiB and 4 MiB blocks: never more than 16 MiB of block
// buffers (4) and 3 GETs in flight, though MaxParallelFetches allows 32
// and the tuner climbs on this slow link, and every byte right.
func TestMinIOBufferSizeBoundsASequentialRead(t *testing.T) {
	store := shapedStore{Store: minioStore(t), bytesPerSec: 4e6}
	opts := testOpts()
	opts.Origin = "s3://minio/"
	opts.CacheBlockSize, opts.PartSize, opts.SmallObjectSize = 4*mib, 4*mib, mib
	opts.MaxParallelFetches, opts.BufferSize = 32, 16*mib
	c := openTuned(t, store, opts)
	defer func() { _ = c.Close() }()
	data := randBytes(78, 40*mib)
	info := put(t, store, "big", data)
	h, err := c.OpenObject(context.Background(), info)
	if err != nil {
		t.Fatal(err)
	}
	var peakBuffers atomic.Int64
	stop := make(chan struct{})
	sampled := make(chan struct{})
	go func() {
		defer close(sampled)
		for {
			if b := c.BufferBytes(); b > peakBuffers.Load() {
				peakBuffers.Store(b)
			}
			select {
			case <-stop:
				return
			case <-time.After(2 * time.Millisecond):
			}
		}
	}()
	got := readSequentially(t, h, len(data))
	close(stop)
	<-sampled
	_ = h.Close()
	st := c.Stats()
	if !bytes.Equal(got, data) {
		t.Fatal("read back wrong bytes")
	}
	t.Logf("peak %d GETs in flight, limit %d, peak buffers %d MiB", st.FetchesPeak, st.FetchLimit, peakBuffers.Load()/mib)
	if st.FetchesPeak > 3 || st.FetchLimit > 3 {
		t.Errorf("peak %d, limit %d GETs in flight; want at most 3 (three quarters of 16 MiB in 4 MiB blocks)", st.FetchesPeak, st.FetchLimit)
	}
	if st.FetchesPeak < 2 {
		t.Errorf("peak %d GETs in flight; the read-ahead never fetched in parallel", st.FetchesPeak)
	}
	if p := peakBuffers.Load(); p > 16*mib {
		t.Errorf("block buffers peaked at %d MiB, above the 16 MiB bufferSize", p/mib)
	}
}

// openTuned opens a cache whose fetch tuner starts at 2 GETs and samples
// every 150 ms, so that it climbs within a short read.
func openTuned(t *testing.T, store objstore.Store, opts Options) *Cache {
	t.Helper()
	tune := testTuning()
	tune.initialFetches = 2
	tune.fetchSample = 150 * time.Millisecond
	c, err := open(context.Background(), t.TempDir(), store, opts, tune)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// readSequentially reads n bytes of h in 1 MiB reads, each after a Prefetch of
// the window ahead of it, as the FUSE layer's sequential reader does.
func readSequentially(t *testing.T, h *Handle, n int) []byte {
	t.Helper()
	got := make([]byte, n)
	for off := int64(0); off < int64(n); off += mib {
		h.Prefetch(off+mib, h.PrefetchWindow())
		if _, err := h.ReadAt(context.Background(), got[off:min(off+mib, int64(n))], off); err != nil && err != io.EOF {
			t.Fatal(err)
		}
	}
	return got
}

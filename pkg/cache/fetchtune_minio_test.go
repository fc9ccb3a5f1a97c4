package cache

import (
	"bytes"
	"context"
	"io"
	"testing"
	"time"
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
		tune := testTuning()
		tune.initialFetches = 2
		tune.fetchSample = 150 * time.Millisecond
		c, err := open(context.Background(), t.TempDir(), store, opts, tune)
		if err != nil {
			t.Fatal(err)
		}
		data := randBytes(77, 40*mib)
		info := put(t, store, "big", data)
		h, err := c.OpenObject(context.Background(), info)
		if err != nil {
			t.Fatal(err)
		}
		got := make([]byte, len(data))
		for off := int64(0); off < int64(len(data)); off += mib {
			h.Prefetch(off+mib, h.PrefetchWindow())
			if _, err := h.ReadAt(context.Background(), got[off:off+mib], off); err != nil && err != io.EOF {
				t.Fatal(err)
			}
		}
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

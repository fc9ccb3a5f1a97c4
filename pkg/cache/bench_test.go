package cache

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/basin-csi/basin/pkg/objstore"
	"github.com/basin-csi/basin/pkg/objstore/objstoretest"
)

const warmSize = 256 * mib

// warmFixture caches one object of warmSize fully (and verified) and
// writes a plain file of the same size next to it.
func warmFixture(b *testing.B) (*Handle, *os.File) {
	b.Helper()
	fake := objstoretest.NewFake()
	data := randBytes(1, warmSize)
	info := put(b, fake, "warm", data)
	dir := b.TempDir()
	opts := testOpts()
	opts.CacheBlockSize, opts.PartSize, opts.SmallObjectSize = DefaultBlockSize, DefaultPartSize, DefaultSmallObjectSize
	c := openTest(b, filepath.Join(dir, "cache"), fake, opts)
	b.Cleanup(func() { _ = c.Close() })
	h := openObj(b, c, info)
	b.Cleanup(func() { _ = h.Close() })
	readAll(b, h, 8*mib)
	if !h.o.allReady() {
		b.Fatal("object not fully cached")
	}
	plain := filepath.Join(dir, "plain")
	if err := os.WriteFile(plain, data, 0o600); err != nil {
		b.Fatal(err)
	}
	f, err := os.Open(plain)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = f.Close() })
	return h, f
}

// BenchmarkWarmReadAt compares 1 MiB ReadAt calls on a fully cached object
// with plain preads of a local file of the same size (both in the page
// cache). "ratio" reports cache throughput / pread throughput measured
// back to back; the goal is >= 0.9.
func BenchmarkWarmReadAt(b *testing.B) {
	h, f := warmFixture(b)
	ctx := context.Background()
	const chunk = 1 * mib
	pread := func(buf []byte, i int) {
		if _, err := f.ReadAt(buf, int64(i%(warmSize/chunk))*chunk); err != nil {
			b.Fatal(err)
		}
	}
	cached := func(buf []byte, i int) {
		if _, err := h.ReadAt(ctx, buf, int64(i%(warmSize/chunk))*chunk); err != nil {
			b.Fatal(err)
		}
	}
	for _, bm := range []struct {
		name string
		read func([]byte, int)
	}{{"pread", pread}, {"cache", cached}} {
		b.Run(bm.name, func(b *testing.B) {
			buf := make([]byte, chunk)
			b.SetBytes(chunk)
			b.ReportAllocs()
			for i := 0; b.Loop(); i++ {
				bm.read(buf, i)
			}
		})
	}
	b.Run("ratio", func(b *testing.B) {
		buf := make([]byte, chunk)
		var tp, tc time.Duration
		for i := 0; b.Loop(); i++ {
			// Alternate in rounds of 16 so both see the same machine noise.
			s := time.Now()
			for j := 0; j < 16; j++ {
				pread(buf, i*16+j)
			}
			tp += time.Since(s)
			s = time.Now()
			for j := 0; j < 16; j++ {
				cached(buf, i*16+j)
			}
			tc += time.Since(s)
		}
		b.ReportMetric(float64(tp)/float64(tc), "cache/pread")
	})
	b.Run("parallel-cache", func(b *testing.B) {
		b.SetBytes(chunk)
		var n atomic.Int64
		b.RunParallel(func(pb *testing.PB) {
			buf := make([]byte, chunk)
			for pb.Next() {
				cached(buf, int(n.Add(1)))
			}
		})
	})
}

// BenchmarkSmallObjects measures per-object index costs with 4 KiB objects
// from an in-memory bucket (run with -benchtime=100000x for 10^5 objects):
// a cold read (lookup, GET, data write, batched index update), a warm read
// of an object cached earlier, an inode allocation, and a cached Stat.
func BenchmarkSmallObjects(b *testing.B) {
	const size = 4 * kib
	setup := func(b *testing.B, n int) (*Cache, []objstore.ObjectInfo) {
		fake := objstoretest.NewFake()
		infos := make([]objstore.ObjectInfo, n)
		data := randBytes(2, size)
		for i := range infos {
			infos[i] = put(b, fake, fmt.Sprintf("ds/%03d/%07d", i%1000, i), data)
		}
		opts := testOpts()
		c, err := open(context.Background(), b.TempDir(), fake, opts, defaultTuning())
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { _ = c.Close() })
		return c, infos
	}
	readOne := func(b *testing.B, c *Cache, info objstore.ObjectInfo, buf []byte) {
		h, err := c.OpenObject(context.Background(), info)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := h.ReadAt(context.Background(), buf, 0); err != nil {
			b.Fatal(err)
		}
		_ = h.Close()
	}
	report := func(b *testing.B, start time.Time) {
		b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "ops/s")
	}
	b.Run("cold-read", func(b *testing.B) {
		c, infos := setup(b, b.N)
		buf := make([]byte, size)
		b.SetBytes(size)
		b.ResetTimer()
		start := time.Now()
		for i := 0; i < b.N; i++ {
			readOne(b, c, infos[i], buf)
		}
		if err := c.flush(); err != nil { // the index work is part of the cost
			b.Fatal(err)
		}
		report(b, start)
	})
	b.Run("warm-read", func(b *testing.B) {
		c, infos := setup(b, b.N)
		buf := make([]byte, size)
		for i := range infos {
			readOne(b, c, infos[i], buf)
		}
		if err := c.flush(); err != nil {
			b.Fatal(err)
		}
		c.tune.maxIdle = 0 // as after a restart: every open goes to the index
		c.trimIdle(0)
		clear(c.verified) // and verifies its object
		b.SetBytes(size)
		b.ResetTimer()
		start := time.Now()
		for i := 0; i < b.N; i++ {
			readOne(b, c, infos[i], buf)
		}
		report(b, start)
	})
	b.Run("inode-alloc", func(b *testing.B) {
		c, _ := setup(b, 0)
		start := time.Now()
		for i := 0; i < b.N; i++ {
			if _, err := c.InodeOf(fmt.Sprintf("ds/%07d", i)); err != nil {
				b.Fatal(err)
			}
		}
		report(b, start)
	})
	b.Run("inode-alloc-parallel", func(b *testing.B) {
		c, _ := setup(b, 0)
		var n atomic.Int64
		b.SetParallelism(16) // concurrent lookups share group commits
		start := time.Now()
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				if _, err := c.InodeOf(fmt.Sprintf("ds/%07d", n.Add(1))); err != nil {
					b.Error(err)
					return
				}
			}
		})
		report(b, start)
	})
	b.Run("inode-lookup", func(b *testing.B) {
		c, _ := setup(b, 0)
		paths := make([]string, 1000)
		for i := range paths {
			paths[i] = fmt.Sprintf("ds/%07d", i)
		}
		if _, err := c.InodesOf(paths); err != nil {
			b.Fatal(err)
		}
		b.ResetTimer()
		start := time.Now()
		for i := 0; i < b.N; i++ {
			if _, err := c.InodeOf(paths[i%len(paths)]); err != nil {
				b.Fatal(err)
			}
		}
		report(b, start)
	})
	b.Run("stat-hit", func(b *testing.B) {
		c, infos := setup(b, 1000)
		for _, info := range infos {
			if _, err := c.Stat(context.Background(), info.Key); err != nil {
				b.Fatal(err)
			}
		}
		if err := c.flush(); err != nil {
			b.Fatal(err)
		}
		b.ResetTimer()
		start := time.Now()
		for i := 0; i < b.N; i++ {
			if _, err := c.Stat(context.Background(), infos[i%len(infos)].Key); err != nil {
				b.Fatal(err)
			}
		}
		report(b, start)
	})
}

// BenchmarkPeriodicFlush times the flusher's periodic pass with 20,000
// clean idle objects in memory and nothing due (the state of a warm
// epoch between flushes): the pass looks at what touch queued, not at
// every object (it held the cache's lock for 3–13 ms with 48,000).
func BenchmarkPeriodicFlush(b *testing.B) {
	const n = 20000
	fake := objstoretest.NewFake()
	data := randBytes(3, 1*kib)
	tune := defaultTuning()
	tune.flushInterval = time.Hour // only the benchmark's passes
	c, err := open(context.Background(), b.TempDir(), fake, testOpts(), tune)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = c.Close() })
	for i := range n {
		readObject(b, c, put(b, fake, fmt.Sprintf("ds/%03d/%07d", i%100, i), data))
	}
	if err := c.flush(); err != nil {
		b.Fatal(err)
	}
	c.mu.Lock()
	inMemory := len(c.objs)
	c.mu.Unlock()
	if inMemory != n {
		b.Fatalf("%d objects in memory, want %d", inMemory, n)
	}
	b.ResetTimer()
	for b.Loop() {
		if err := c.flushGrain(c.tune.atimeGrain); err != nil {
			b.Fatal(err)
		}
	}
}

package fuse

import (
	"fmt"
	"github.com/basin-csi/basin/pkg/mountspec"
	"io"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/basin-csi/basin/pkg/objstore"
)

const benchSize = 256 << 20

// readAll reads name with 1 MiB requests, like dd bs=1M.
func readAll(b *testing.B, name string) {
	f, err := os.Open(name)
	if err != nil {
		b.Fatal(err)
	}
	defer func() { _ = f.Close() }()
	buf := make([]byte, 1<<20)
	var n int64
	for {
		got, err := f.Read(buf)
		n += int64(got)
		if err == io.EOF {
			break
		}
		if err != nil {
			b.Fatal(err)
		}
	}
	if n != benchSize {
		b.Fatalf("read %d bytes, want %d", n, benchSize)
	}
}

func dropCaches(b *testing.B) {
	if err := os.WriteFile("/proc/sys/vm/drop_caches", []byte("3"), 0); err != nil {
		b.Logf("drop_caches: %v", err)
	}
}

// benchCold reads a 256 MiB object through a fresh cache each iteration.
func benchCold(b *testing.B, store objstore.Store) {
	put(b, store, "big", randomBytes(benchSize, 1))
	b.SetBytes(benchSize)
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		m := mountStore(b, store, mountSpec{cache: realCache, cfg: Config{Spec: mountspec.Spec{MetadataTTL: time.Minute, ReadAhead: DefaultReadAhead}}})
		dropCaches(b)
		b.StartTimer()
		readAll(b, path(m, "big"))
	}
}

func BenchmarkReadColdFile(b *testing.B) {
	s, _ := newFileStore(b)
	benchCold(b, s)
}

func BenchmarkReadColdMinIO(b *testing.B) { benchCold(b, newMinIOStore(b, nil)) }

// benchWarm reads a fully cached object; with drop, after dropping the page
// cache (passthrough then reads the cache file from disk).
func benchWarm(b *testing.B, cfg Config, drop bool) {
	store, _ := newFileStore(b)
	put(b, store, "big", randomBytes(benchSize, 2))
	cfg.MetadataTTL = time.Minute
	m := mountStore(b, store, mountSpec{cache: realCache, cfg: cfg})
	readAll(b, path(m, "big")) // fill the cache
	b.SetBytes(benchSize)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if drop {
			b.StopTimer()
			dropCaches(b)
			b.StartTimer()
		}
		readAll(b, path(m, "big"))
	}
	b.StopTimer()
	st := m.fsys.Stats()
	b.ReportMetric(float64(st.PassthroughOpens), "passthrough-opens")
	b.ReportMetric(float64(st.UserReadBytes)/benchSize, "user-space-passes")
}

func BenchmarkReadWarmPassthrough(b *testing.B) { benchWarm(b, Config{}, true) }
func BenchmarkReadWarmUserSpace(b *testing.B)   { benchWarm(b, Config{DisablePassthrough: true}, true) }
func BenchmarkReadWarmUserSpacePageCache(b *testing.B) {
	benchWarm(b, Config{DisablePassthrough: true}, false)
}

// BenchmarkReadSmallFilesWarm reads 1,000 cached 100 KiB files per
// iteration with 8 readers: the per-open cost.
func BenchmarkReadSmallFilesWarm(b *testing.B) {
	const files, size = 1000, 100 << 10
	store, _ := newFileStore(b)
	for i := 0; i < files; i++ {
		put(b, store, fmt.Sprintf("s/%04d", i), randomBytes(size, byte(i)))
	}
	m := mountStore(b, store, mountSpec{cache: realCache, cfg: Config{Spec: mountspec.Spec{MetadataTTL: time.Minute, ReadAhead: DefaultReadAhead}}})
	readFiles := func() {
		var wg sync.WaitGroup
		for w := 0; w < 8; w++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := w; i < files; i += 8 {
					if _, err := os.ReadFile(path(m, fmt.Sprintf("s/%04d", i))); err != nil {
						b.Error(err)
						return
					}
				}
			}()
		}
		wg.Wait()
	}
	readFiles() // fill the cache
	b.SetBytes(files * size)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		readFiles()
	}
	b.StopTimer()
	b.ReportMetric(float64(b.Elapsed().Microseconds())/float64(b.N*files), "µs/file")
}

package cache

import (
	"bytes"
	"context"
	"io"
	"maps"
	"math/rand/v2"
	"os"
	"slices"
	"testing"
	"time"

	"github.com/basin-csi/basin/internal/testserver"
	"github.com/basin-csi/basin/pkg/mountspec"
	"github.com/basin-csi/basin/pkg/objstore"
	"github.com/basin-csi/basin/pkg/objstore/objstoretest"
)

func TestMain(m *testing.M) {
	if os.Getenv(crashChildEnv) != "" {
		crashChild()
		return
	}
	code := m.Run()
	testserver.Shutdown()
	os.Exit(code)
}

const kib, mib = 1 << 10, 1 << 20

// testTuning flushes often so tests see persisted state quickly.
func testTuning() tuning {
	t := defaultTuning()
	t.flushInterval = 20 * time.Millisecond
	return t
}

// testOpts are small blocks so tests touch many of them cheaply.
func testOpts() Options {
	return Options{
		Spec: mountspec.Spec{
			CacheBlockSize:      64 * kib,
			MetadataTTL:         time.Minute,
			NegativeMetadataTTL: time.Minute,
			Prefetch:            true,
		},
		VolumeID:        "test",
		Origin:          "fake://bucket/",
		PartSize:        128 * kib,
		SmallObjectSize: 128 * kib,
		MinFreeRatio:    -1,
	}
}

func openTest(t testing.TB, dir string, store objstore.Store, opts Options) *Cache {
	t.Helper()
	c, err := open(context.Background(), dir, store, opts, testTuning())
	if err != nil {
		t.Fatalf("open: %v", err)
	}
	return c
}

// newFixture opens a cache over a fresh fake in a temp dir, closed at the
// end of the test after a Verify.
func newFixture(t *testing.T, opts Options) (*Cache, *objstoretest.Fake, string) {
	t.Helper()
	fake := objstoretest.NewFake()
	dir := t.TempDir()
	c := openTest(t, dir, fake, opts)
	t.Cleanup(func() {
		if c.ix != nil {
			waitQuiescent(t, c)
			if _, err := c.Verify(context.Background()); err != nil && !closedCache(c) {
				t.Errorf("verify at cleanup: %v", err)
			}
			_ = c.Close()
		}
	})
	return c, fake, dir
}

func closedCache(c *Cache) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.closed
}

func randBytes(seed uint64, n int) []byte {
	r := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	b := make([]byte, n)
	for i := 0; i < n; i += 8 {
		v := r.Uint64()
		for j := 0; j < 8 && i+j < n; j++ {
			b[i+j] = byte(v >> (8 * j))
		}
	}
	return b
}

func put(t testing.TB, s objstore.Store, key string, data []byte) objstore.ObjectInfo {
	t.Helper()
	info, err := s.Put(context.Background(), key, bytes.NewReader(data), objstore.PutOptions{Size: int64(len(data))})
	if err != nil {
		t.Fatalf("put %s: %v", key, err)
	}
	return info
}

// readAll reads the whole object through h in chunks of n bytes.
func readAll(t testing.TB, h *Handle, n int) []byte {
	t.Helper()
	out := make([]byte, 0, h.Info().Size)
	buf := make([]byte, n)
	for off := int64(0); ; {
		m, err := h.ReadAt(context.Background(), buf, off)
		out = append(out, buf[:m]...)
		off += int64(m)
		if err == io.EOF {
			return out
		}
		if err != nil {
			t.Fatalf("ReadAt(%d): %v", off, err)
		}
		if m == 0 {
			t.Fatalf("ReadAt(%d) returned 0 bytes and no error", off)
		}
	}
}

func openObj(t testing.TB, c *Cache, info objstore.ObjectInfo) *Handle {
	t.Helper()
	h, err := c.OpenObject(context.Background(), info)
	if err != nil {
		t.Fatalf("OpenObject(%s): %v", info.Key, err)
	}
	return h
}

// readObject opens, reads fully and closes.
func readObject(t testing.TB, c *Cache, info objstore.ObjectInfo) []byte {
	t.Helper()
	h := openObj(t, c, info)
	defer func() { _ = h.Close() }()
	return readAll(t, h, 48*kib)
}

func mustFlush(t testing.TB, c *Cache) {
	t.Helper()
	if err := c.flush(); err != nil {
		t.Fatalf("flush: %v", err)
	}
}

// waitQuiescent waits until no block of c is being fetched or written, as
// Verify requires: a read returns before the blocks it fetched are written
// (behind it), so a test's last reads may still be writing when it ends.
func waitQuiescent(t *testing.T, c *Cache) {
	t.Helper()
	busy := func() bool {
		c.mu.Lock()
		defer c.mu.Unlock()
		objs := slices.Collect(maps.Values(c.objs))
		objs = slices.AppendSeq(objs, maps.Keys(c.detached))
		for _, o := range objs {
			o.mu.Lock()
			n := len(o.inflight) + o.writes
			o.mu.Unlock()
			if n > 0 {
				return true
			}
		}
		return false
	}
	waitFor(t, "the fetches and block writes of the test's reads to end", func() bool { return !busy() })
}

package cache

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/basin-csi/basin/pkg/objstore"
	"github.com/basin-csi/basin/pkg/objstore/objstoretest"
)

// TestConcurrentStress runs readers, prefetchers, writers (new versions,
// some installed write-through) and evictions (a capacity of a fraction of
// the data) at once. Every byte a reader gets must belong to the version
// its handle pinned; reads of a replaced version may fail only with
// ErrPreconditionFailed. At the end the cache must verify.
func TestConcurrentStress(t *testing.T) {
	opts := testOpts()
	opts.CacheSize = 1 * mib // about a third of the data
	c, fake, _ := newFixture(t, opts)
	const keys = 16
	var mu sync.Mutex               // guards versions
	versions := map[string][]byte{} // version → content
	write := func(r *rand.Rand, i int, install bool) {
		data := randBytes(r.Uint64(), 1+r.IntN(400*kib))
		key := fmt.Sprintf("k%d", i)
		if install {
			f, err := os.CreateTemp(c.StagingDir(), "s")
			if err != nil {
				t.Error(err)
				return
			}
			if _, err := f.Write(data); err != nil {
				t.Error(err)
				return
			}
			if err := f.Close(); err != nil {
				t.Error(err)
				return
			}
			info := put(t, fake, key, data)
			mu.Lock()
			versions[info.Version] = data
			mu.Unlock()
			if err := c.Install(context.Background(), info, f.Name()); errors.Is(err, ErrNoSpace) {
				_ = os.Remove(f.Name()) // everything else is pinned or dirty: legitimate
			} else if err != nil {
				t.Error(err)
			}
			return
		}
		info := put(t, fake, key, data)
		mu.Lock()
		versions[info.Version] = data
		mu.Unlock()
	}
	r0 := rand.New(rand.NewPCG(1, 2))
	for i := 0; i < keys; i++ {
		write(r0, i, false)
	}
	ctx := context.Background()
	deadline := time.Now().Add(3 * time.Second)
	var wg sync.WaitGroup
	for g := 0; g < 8; g++ {
		wg.Add(1)
		go func(g int) {
			defer wg.Done()
			r := rand.New(rand.NewPCG(uint64(g), 99))
			buf := make([]byte, 100*kib)
			for time.Now().Before(deadline) {
				i := r.IntN(keys)
				if g == 0 && r.IntN(4) == 0 {
					write(r, i, r.IntN(2) == 0)
					continue
				}
				info, err := c.Stat(ctx, fmt.Sprintf("k%d", i))
				if err != nil {
					t.Error(err)
					return
				}
				h, err := c.OpenObject(ctx, info)
				if err != nil {
					t.Error(err)
					return
				}
				mu.Lock()
				want := versions[info.Version]
				mu.Unlock()
				if r.IntN(3) == 0 {
					h.Prefetch(0, info.Size)
				}
				for n := 0; n < 3; n++ {
					off := r.Int64N(info.Size + 1)
					m, err := h.ReadAt(ctx, buf[:r.IntN(len(buf))+1], off)
					if errors.Is(err, objstore.ErrPreconditionFailed) {
						break
					}
					if err != nil && m == 0 && off < info.Size {
						t.Errorf("read %s@%d: %v", info.Key, off, err)
						break
					}
					if !bytes.Equal(buf[:m], want[off:off+int64(m)]) {
						t.Errorf("read %s@%d: bytes of another version", info.Key, off)
						break
					}
				}
				if p, ok := h.LocalPath(); ok {
					if b, err := os.ReadFile(p); err != nil || !bytes.Equal(b, want) {
						t.Errorf("LocalPath of %s: content differs (%v)", info.Key, err)
					}
				}
				_ = h.Close()
			}
		}(g)
	}
	wg.Wait()
	waitFor(t, "background fetches", func() bool {
		c.mu.Lock()
		defer c.mu.Unlock()
		for _, o := range c.objs {
			o.mu.Lock()
			busy := o.pins > 0
			o.mu.Unlock()
			if busy {
				return false
			}
		}
		return true
	})
	if used := c.Stats().UsedBytes; used > opts.CacheSize {
		t.Errorf("used %d above capacity %d", used, opts.CacheSize)
	}
	if rep, err := c.Verify(ctx); err != nil {
		t.Fatalf("verify: %v %v", err, rep.Problems)
	}
	st := c.Stats()
	t.Logf("stats: %+v, GETs %d", st, fake.Calls(objstoretest.OpRead))
	if st.Evictions == 0 || st.Hits == 0 || st.Misses == 0 {
		t.Errorf("the stress did not exercise hits, misses and evictions: %+v", st)
	}
}

package cache

import (
	"bytes"
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/basin-csi/basin/pkg/objstore/objstoretest"
)

func (p *bufPool) waiting() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.waiters
}

// TestPoolWaitHoldsNoFetchSlot: a block larger than PartSize holds its
// buffer while its parts wait for fetch slots, so a ranged fetch must not
// hold a fetch slot while it waits for a buffer. With one slot and one
// buffer, a large block waiting for the buffer first and a small object's
// fetch second used to deadlock once the buffer came back to the large
// block.
func TestPoolWaitHoldsNoFetchSlot(t *testing.T) {
	opts := testOpts()
	opts.BlockSize = 128 * kib
	opts.PartSize = 64 * kib // 128 KiB blocks are fetched in two parts
	opts.SmallObjectSize = 64 * kib
	opts.MaxParallelFetches = 1
	c, fake, _ := newFixture(t, opts)
	p := c.pool(opts.BlockSize)
	p.maxBufs = 1
	held := p.get()

	bigData := randBytes(501, 256*kib) // two blocks, fetched in parts
	big := openObj(t, c, put(t, fake, "big", bigData))
	defer big.Close()
	smallData := randBytes(502, 48*kib) // one pooled block, one ranged GET
	small := openObj(t, c, put(t, fake, "small", smallData))
	defer small.Close()

	big.Prefetch(0, opts.BlockSize)
	waitFor(t, "the large block to wait for a buffer", func() bool { return p.waiting() == 1 })
	small.Prefetch(0, int64(len(smallData)))
	waitFor(t, "the small object to wait for a buffer", func() bool { return p.waiting() == 2 })
	p.put(held) // goes to the large block, the first waiter

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for _, r := range []struct {
		h    *Handle
		want []byte
	}{{big, bigData[:opts.BlockSize]}, {small, smallData}} {
		got := make([]byte, len(r.want))
		if n, err := r.h.ReadAt(ctx, got, 0); err != nil || !bytes.Equal(got[:n], r.want) {
			t.Fatalf("%s: read %d bytes, %v (deadlocked fetches time out)", r.h.Info().Key, n, err)
		}
	}
}

// TestKeptBlocksExpire: blocks kept for a reader that never reads them
// to their end go after the pool's idle time, although the file stays
// open; then the pool frees its buffers. The last pin also closes the
// O_DIRECT descriptor, so idle objects hold one descriptor.
func TestKeptBlocksExpire(t *testing.T) {
	opts := testOpts()
	dir := t.TempDir()
	if !directSupported(t, dir) {
		t.Skip("the test directory's file system refuses O_DIRECT: nothing is kept (TestNoDirectIO covers that case)")
	}
	tune := testTuning()
	tune.poolIdle = 50 * time.Millisecond
	fake := objstoretest.NewFake()
	c, err := open(context.Background(), dir, fake, opts, tune)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	data := randBytes(510, 1*mib)
	h := openObj(t, c, put(t, fake, "unread", data))
	h.Prefetch(0, h.Info().Size)
	waitReady(t, h)
	p := c.pool(opts.BlockSize)
	kept := func() int {
		p.mu.Lock()
		defer p.mu.Unlock()
		return p.kept.Len()
	}
	if kept() == 0 {
		t.Fatal("no block kept after a direct write")
	}
	waitFor(t, "unread kept blocks to expire with the file open", func() bool { return kept() == 0 })
	h.o.mu.Lock()
	inObject := len(h.o.kept)
	h.o.mu.Unlock()
	if inObject != 0 || h.o.keptBits.hasAny(0, h.o.nblocks-1) {
		t.Errorf("object still keeps %d blocks", inObject)
	}
	if got := readAll(t, h, 48*kib); !bytes.Equal(got, data) {
		t.Error("read after expiry differs")
	}
	if h.o.direct.Load() == nil {
		t.Error("no O_DIRECT descriptor while the object is pinned")
	}
	if err := h.Close(); err != nil {
		t.Fatal(err)
	}
	if h.o.direct.Load() != nil {
		t.Error("O_DIRECT descriptor still open after the last pin went")
	}
	waitFor(t, "the idle pool to free its buffers", func() bool {
		p.mu.Lock()
		defer p.mu.Unlock()
		return p.total == 0 && p.timer == nil
	})
	if _, err := c.Verify(context.Background()); err != nil {
		t.Error(err)
	}
}

// TestRangedFetchWithPartsAndTinyPool: with blocks larger than PartSize a
// ranged fetch of several blocks (a small object) that finds the pool
// empty mid-GET closes the GET while it waits and continues with a new
// one; concurrent readers of such objects and of part-fetched ones all
// get their bytes, and every buffer comes back.
func TestRangedFetchWithPartsAndTinyPool(t *testing.T) {
	opts := testOpts()
	opts.BlockSize = 128 * kib
	opts.PartSize = 64 * kib
	opts.SmallObjectSize = 640 * kib
	opts.MaxParallelFetches = 2
	c, fake, _ := newFixture(t, opts)
	c.pool(opts.BlockSize).maxBufs = 2
	var wg sync.WaitGroup
	for i := range 6 {
		size := 600 * kib // small: five blocks in one GET
		if i%2 == 1 {
			size = 1*mib + 3*kib // large: blocks fetched in parts
		}
		data := randBytes(uint64(550+i), size)
		info := put(t, fake, fmt.Sprintf("mixed/%d", i), data)
		wg.Go(func() { // t.Error only: not the test's goroutine
			h, err := c.OpenObject(context.Background(), info)
			if err != nil {
				t.Error(err)
				return
			}
			defer h.Close()
			got := make([]byte, len(data))
			if n, err := h.ReadAt(context.Background(), got, 0); err != nil || !bytes.Equal(got[:n], data) {
				t.Errorf("%s: read %d bytes, %v; or bytes differ", info.Key, n, err)
			}
		})
	}
	wg.Wait()
	poolIdleCheck(t, c, opts.BlockSize)
}

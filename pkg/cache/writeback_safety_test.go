package cache

import (
	"bytes"
	"context"
	"fmt"
	"sync"
	"testing"
	"time"
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

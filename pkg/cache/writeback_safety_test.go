package cache

import (
	"bytes"
	"context"
	"fmt"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/basin-csi/basin/internal/testserver"
	"github.com/basin-csi/basin/pkg/objstore"
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
	opts.CacheBlockSize = 128 * kib
	opts.PartSize = 64 * kib // 128 KiB blocks are fetched in two parts
	opts.SmallObjectSize = 64 * kib
	opts.MaxParallelFetches = 1
	c, fake, _ := newFixture(t, opts)
	p := c.pool(opts.CacheBlockSize)
	p.maxBufs = 1
	held := p.get()

	bigData := randBytes(501, 256*kib) // two blocks, fetched in parts
	big := openObj(t, c, put(t, fake, "big", bigData))
	defer func() { _ = big.Close() }()
	smallData := randBytes(502, 48*kib) // one pooled block, one ranged GET
	small := openObj(t, c, put(t, fake, "small", smallData))
	defer func() { _ = small.Close() }()

	big.Prefetch(0, opts.CacheBlockSize)
	waitFor(t, "the large block to wait for a buffer", func() bool { return p.waiting() == 1 })
	small.Prefetch(0, int64(len(smallData)))
	waitFor(t, "the small object to wait for a buffer", func() bool { return p.waiting() == 2 })
	p.put(held) // goes to the large block, the first waiter

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for _, r := range []struct {
		h    *Handle
		want []byte
	}{{big, bigData[:opts.CacheBlockSize]}, {small, smallData}} {
		got := make([]byte, len(r.want))
		if n, err := r.h.ReadAt(ctx, got, 0); err != nil || !bytes.Equal(got[:n], r.want) {
			t.Fatalf("%s: read %d bytes, %v (deadlocked fetches time out)", r.h.Info().Key, n, err)
		}
	}
}

// TestKeptBlocksExpire: blocks kept for a reader that never reads them
// to their end go after the pool's idle time, although the file stays
// open; then the pool frees its buffers, and Stats counts them until
// then. The last pin also closes the O_DIRECT descriptor, so idle objects
// hold one descriptor.
func TestKeptBlocksExpire(t *testing.T) {
	opts := testOpts()
	dir := t.TempDir()
	if !directSupported(t, dir) {
		testserver.Unavailable(t, "the test directory's file system refuses O_DIRECT: nothing is kept (TestNoDirectIO covers that case)")
	}
	tune := testTuning()
	tune.poolIdle = 50 * time.Millisecond
	fake := objstoretest.NewFake()
	c, err := open(context.Background(), dir, fake, opts, tune)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = c.Close() }()
	data := randBytes(510, 1*mib)
	h := openObj(t, c, put(t, fake, "unread", data))
	h.Prefetch(0, h.Info().Size)
	waitReady(t, h)
	p := c.pool(opts.CacheBlockSize)
	kept := func() int {
		p.mu.Lock()
		defer p.mu.Unlock()
		return p.kept.Len()
	}
	if kept() == 0 {
		t.Fatal("no block kept after a direct write")
	}
	if b := c.Stats().BufferBytes; b < opts.CacheBlockSize {
		t.Errorf("Stats().BufferBytes = %d with a block kept; want at least one block (%d)", b, opts.CacheBlockSize)
	}
	// The pool's list empties first; the object lets go of each block
	// just after (trimIdle), so wait for both.
	inObject := func() bool {
		h.o.mu.Lock()
		defer h.o.mu.Unlock()
		return len(h.o.kept) != 0 || h.o.keptBits.hasAny(0, h.o.nblocks-1)
	}
	waitFor(t, "unread kept blocks to expire with the file open, in the pool and in the object", func() bool { return kept() == 0 && !inObject() })
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
	if b := c.Stats().BufferBytes; b != 0 {
		t.Errorf("Stats().BufferBytes = %d after the pool freed its buffers; want 0", b)
	}
	if _, err := c.Verify(context.Background()); err != nil {
		t.Error(err)
	}
}

// mountRamfs mounts a ramfs (root only), a file system that refuses
// O_DIRECT.
func mountRamfs(t *testing.T) string {
	t.Helper()
	testserver.RequireRoot(t, "mounting a ramfs")
	dir := t.TempDir()
	if out, err := exec.Command("mount", "-t", "ramfs", "-o", "mode=0700", "ramfs", dir).CombinedOutput(); err != nil {
		testserver.Unavailable(t, "cannot mount ramfs: %v: %s", err, out)
	}
	t.Cleanup(func() { _ = exec.Command("umount", "-l", dir).Run() })
	return dir
}

// TestNoDirectIO: on a file system that refuses O_DIRECT blocks are
// written through the page cache, nothing is kept, and the cache reads
// back, reopens and verifies like anywhere else.
func TestNoDirectIO(t *testing.T) {
	dir := mountRamfs(t) + "/cache"
	if directSupported(t, filepath.Dir(dir)) {
		t.Fatal("ramfs accepted O_DIRECT")
	}
	fake := objstoretest.NewFake()
	opts := testOpts()
	c := openTest(t, dir, fake, opts)
	data := randBytes(520, 1*mib+5*kib)
	info := put(t, fake, "ramfs", data)
	h := openObj(t, c, info)
	h.Prefetch(0, info.Size)
	if got := readAll(t, h, 48*kib); !bytes.Equal(got, data) {
		t.Fatal("read differs")
	}
	waitReady(t, h)
	h.o.mu.Lock()
	noDirect, kept := h.o.noDirect, len(h.o.kept)
	h.o.mu.Unlock()
	if !noDirect || kept != 0 || h.o.direct.Load() != nil {
		t.Errorf("noDirect %v, %d blocks kept, direct descriptor %v; want buffered writes only", noDirect, kept, h.o.direct.Load() != nil)
	}
	_ = h.Close()
	poolIdleCheck(t, c, opts.CacheBlockSize)
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	fake.SetError(objstoretest.OpRead, objstore.ErrUnavailable)
	c = openTest(t, dir, fake, opts)
	defer func() { _ = c.Close() }()
	if got := readObject(t, c, info); !bytes.Equal(got, data) {
		t.Error("reopened cache read differs")
	}
	if _, err := c.Verify(context.Background()); err != nil {
		t.Error(err)
	}
}

// TestCloseDrainsWriteBack: a reader has every byte before the blocks are
// written; closing the cache right after (the handle still open) waits for
// the writes and records them, so the reopened cache serves the object
// without the bucket and verifies.
func TestCloseDrainsWriteBack(t *testing.T) {
	fake := objstoretest.NewFake()
	dir := t.TempDir()
	opts := testOpts()
	c := openTest(t, dir, fake, opts)
	data := randBytes(530, 2*mib+3*kib)
	info := put(t, fake, "drain", data)
	h := openObj(t, c, info)
	h.Prefetch(0, info.Size)
	if got := readAll(t, h, 256*kib); !bytes.Equal(got, data) {
		t.Fatal("read differs")
	}
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	if !h.o.allReady() {
		t.Error("Close returned with blocks still being written")
	}
	_ = h.Close()
	fake.SetError(objstoretest.OpRead, objstore.ErrUnavailable)
	c = openTest(t, dir, fake, opts)
	defer func() { _ = c.Close() }()
	if _, err := c.Verify(context.Background()); err != nil {
		t.Error(err)
	}
	if got := readObject(t, c, info); !bytes.Equal(got, data) {
		t.Error("reopened cache read differs")
	}
}

// TestNoEvictionDuringWriteBack: a fetch whose handle closed before the
// bytes arrived still pins its object until its blocks are written, so
// an eviction meanwhile leaves the object, its record and its data file
// alone.
func TestNoEvictionDuringWriteBack(t *testing.T) {
	opts := testOpts()
	c, fake, _ := newFixture(t, opts)
	data := randBytes(540, 512*kib)
	info := put(t, fake, "pinned-by-write", data)
	h := openObj(t, c, info)
	buf := make([]byte, 64*kib)
	if _, err := h.ReadAt(context.Background(), buf, 0); err != nil {
		t.Fatal(err)
	}
	_ = h.Close()
	mustFlush(t, c) // in the index, so an eviction candidate

	gate := make(chan struct{})
	fake.SetHook(func(ctx context.Context, op objstoretest.Op, key string) error {
		if op == objstoretest.OpRead {
			select {
			case <-gate:
			case <-ctx.Done():
				return ctx.Err()
			}
		}
		return nil
	})
	h = openObj(t, c, info)
	o := h.o
	h.Prefetch(0, info.Size)
	_ = h.Close() // nothing arrived: the fetch's pin remains
	if freed := c.evict(0, -1); freed != 0 {
		t.Errorf("evicted %d bytes of an object being fetched", freed)
	}
	close(gate)
	waitFor(t, "the fetch to finish", func() bool {
		o.mu.Lock()
		defer o.mu.Unlock()
		return o.pins == 0 && o.allReady()
	})
	c.mu.Lock()
	current := c.objs[info.Key] == o
	c.mu.Unlock()
	if !current {
		t.Fatal("object left the cache during its fetch")
	}
	fake.SetError(objstoretest.OpRead, objstore.ErrUnavailable)
	if got := readObject(t, c, info); !bytes.Equal(got, data) {
		t.Error("read differs")
	}
}

// TestRangedFetchWithPartsAndTinyPool: with blocks larger than PartSize a
// ranged fetch of several blocks (a small object) that finds the pool
// empty mid-GET closes the GET while it waits and continues with a new
// one; concurrent readers of such objects and of part-fetched ones all
// get their bytes, and every buffer comes back.
func TestRangedFetchWithPartsAndTinyPool(t *testing.T) {
	opts := testOpts()
	opts.CacheBlockSize = 128 * kib
	opts.PartSize = 64 * kib
	opts.SmallObjectSize = 640 * kib
	opts.MaxParallelFetches = 2
	c, fake, _ := newFixture(t, opts)
	c.pool(opts.CacheBlockSize).maxBufs = 2
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
			defer func() { _ = h.Close() }()
			got := make([]byte, len(data))
			if n, err := h.ReadAt(context.Background(), got, 0); err != nil || !bytes.Equal(got[:n], data) {
				t.Errorf("%s: read %d bytes, %v; or bytes differ", info.Key, n, err)
			}
		})
	}
	wg.Wait()
	poolIdleCheck(t, c, opts.CacheBlockSize)
}

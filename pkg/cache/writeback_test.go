package cache

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/basin-csi/basin/internal/testserver"
)

func TestBufPoolBound(t *testing.T) {
	p := newBufPool(64*kib, DefaultBufferSize, time.Minute)
	p.maxBufs = 2
	a, b := p.get(), p.get()
	got := make(chan *[]byte)
	go func() { got <- p.get() }()
	select {
	case <-got:
		t.Fatal("get returned a third buffer from a pool of two")
	case <-time.After(50 * time.Millisecond):
	}
	p.put(a)
	select {
	case c := <-got:
		if c != a {
			t.Error("the waiting get did not receive the buffer put back")
		}
	case <-time.After(10 * time.Second):
		t.Fatal("get still waiting after a put")
	}
	p.put(b)
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.total != 2 || len(p.free) != 1 {
		t.Errorf("total %d, free %d; want 2 and 1", p.total, len(p.free))
	}
}

// poolIdle checks that every buffer of c's pool for block size bs is back
// and no block is kept.
func poolIdleCheck(t *testing.T, c *Cache, bs int64) {
	t.Helper()
	p := c.pool(bs)
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.total != len(p.free) || p.kept.Len() != 0 {
		t.Errorf("pool: %d buffers, %d free, %d kept; want all free, none kept", p.total, len(p.free), p.kept.Len())
	}
	if p.total > p.maxBufs {
		t.Errorf("pool: %d buffers, bound %d", p.total, p.maxBufs)
	}
}

// TestSequentialReadsWithTinyPool reads several large objects at once,
// prefetching like the FUSE layer, with a pool of three block buffers:
// fetches wait for buffers and reclaim kept blocks, and everything still
// completes byte-exact with every buffer back at the end.
func TestSequentialReadsWithTinyPool(t *testing.T) {
	opts := testOpts()
	c, fake, _ := newFixture(t, opts)
	c.pool(opts.CacheBlockSize).maxBufs = 3
	const readers = 4
	var wg sync.WaitGroup
	for i := range readers {
		data := randBytes(uint64(300+i), 2*mib+7*kib)
		info := put(t, fake, fmt.Sprintf("seq/%d", i), data)
		wg.Go(func() {
			h, err := c.OpenObject(context.Background(), info)
			if err != nil {
				t.Error(err)
				return
			}
			defer func() { _ = h.Close() }()
			buf := make([]byte, 48*kib)
			var out []byte
			for off := int64(0); off < info.Size; off += int64(len(buf)) {
				h.Prefetch(off, 512*kib)
				n, err := h.ReadAt(context.Background(), buf, off)
				if err != nil && n+int(off) != int(info.Size) {
					t.Errorf("%s: ReadAt(%d): %v", info.Key, off, err)
					return
				}
				out = append(out, buf[:n]...)
			}
			if !bytes.Equal(out, data) {
				t.Errorf("%s: bytes differ", info.Key)
			}
		})
	}
	wg.Wait()
	poolIdleCheck(t, c, opts.CacheBlockSize)
}

// TestReadBackAfterDirectWrite checks that blocks written with O_DIRECT
// (where the file system supports it) are kept for the reader behind the
// prefetch until it has read them, that the data file holds the object,
// and that no buffer is left behind.
func TestReadBackAfterDirectWrite(t *testing.T) {
	opts := testOpts()
	c, fake, dir := newFixture(t, opts)
	data := randBytes(310, 1*mib+5*kib) // 17 blocks, the last one short
	info := put(t, fake, "direct", data)
	h := openObj(t, c, info)
	h.Prefetch(0, info.Size)
	waitReady(t, h)
	direct := directSupported(t, dir)
	h.o.mu.Lock()
	kept := len(h.o.kept)
	h.o.mu.Unlock()
	if direct && (h.o.direct.Load() == nil || kept == 0) {
		t.Errorf("O_DIRECT supported, but direct descriptor %v, %d blocks kept", h.o.direct.Load() != nil, kept)
	}
	if got := readAll(t, h, 48*kib); !bytes.Equal(got, data) {
		t.Fatal("read differs")
	}
	h.o.mu.Lock()
	kept = len(h.o.kept)
	h.o.mu.Unlock()
	if kept != 0 {
		t.Errorf("%d blocks still kept after being read to their end", kept)
	}
	if err := h.Close(); err != nil {
		t.Fatal(err)
	}
	onDisk, err := os.ReadFile(h.o.path)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(onDisk, data) {
		t.Error("data file differs from the object")
	}
	poolIdleCheck(t, c, opts.CacheBlockSize)

	// Prefetched but never read: the last pin drops the kept buffers.
	h = openObj(t, c, put(t, fake, "unread", data))
	h.Prefetch(0, info.Size)
	waitReady(t, h)
	if err := h.Close(); err != nil {
		t.Fatal(err)
	}
	poolIdleCheck(t, c, opts.CacheBlockSize)
}

// TestReadBlocksNotKept: a block fetched because a reader waits for it
// (a random reader) is not kept after its write, so random readers do not
// fill the pool with buffers nobody reads again; a block fetched ahead of
// a reader is.
func TestReadBlocksNotKept(t *testing.T) {
	opts := testOpts()
	c, fake, dir := newFixture(t, opts)
	if !directSupported(t, dir) {
		testserver.Unavailable(t, "the test directory's file system refuses O_DIRECT: nothing is kept (TestNoDirectIO covers that case)")
	}
	data := randBytes(320, 1*mib)
	h := openObj(t, c, put(t, fake, "random", data))
	defer func() { _ = h.Close() }()
	ready := func(b int) func() bool {
		return func() bool {
			h.o.mu.Lock()
			defer h.o.mu.Unlock()
			return h.o.ready.has(b)
		}
	}
	keptBlocks := func() int {
		h.o.mu.Lock()
		defer h.o.mu.Unlock()
		return len(h.o.kept)
	}
	buf := make([]byte, 16*kib)
	off := 5*opts.CacheBlockSize + 8*kib // inside block 5, not to its end
	if n, err := h.ReadAt(context.Background(), buf, off); err != nil || !bytes.Equal(buf[:n], data[off:off+int64(len(buf))]) {
		t.Fatalf("ReadAt: %d, %v, or bytes differ", n, err)
	}
	waitFor(t, "block 5 written", ready(5))
	if k := keptBlocks(); k != 0 {
		t.Errorf("%d blocks kept after a read that waited for its block; want 0", k)
	}
	h.Prefetch(9*opts.CacheBlockSize, opts.CacheBlockSize)
	waitFor(t, "block 9 written", ready(9))
	if k := keptBlocks(); k != 1 {
		t.Errorf("%d blocks kept after a read-ahead of one block; want 1", k)
	}
	if got := readAll(t, h, 48*kib); !bytes.Equal(got, data) {
		t.Fatal("read differs")
	}
}

// waitReady waits until every block of h's object is ready.
func waitReady(t *testing.T, h *Handle) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); !h.o.allReady(); time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("prefetch did not complete")
		}
	}
}

func directSupported(t *testing.T, dir string) bool {
	t.Helper()
	f, err := os.OpenFile(filepath.Join(dir, "odirect-probe"), os.O_RDWR|os.O_CREATE|unix.O_DIRECT, 0o600)
	if errors.Is(err, unix.EINVAL) {
		return false
	}
	if err != nil {
		t.Fatal(err)
	}
	_ = f.Close()
	return os.Remove(f.Name()) == nil
}

// TestSmallObjectWrittenThroughThePageCache checks that a small object,
// even one of whole aligned blocks, is written through the page cache:
// its next open reads the data file by FUSE passthrough, which must not
// have to go to the disk.
func TestSmallObjectWrittenThroughThePageCache(t *testing.T) {
	opts := testOpts()
	c, fake, dir := newFixture(t, opts)
	if !directSupported(t, dir) {
		t.Log("the file system refuses O_DIRECT: every write goes through the page cache anyway")
	}
	data := randBytes(311, int(opts.SmallObjectSize)) // two whole blocks
	info := put(t, fake, "small", data)
	h := openObj(t, c, info)
	if got := readAll(t, h, 48*kib); !bytes.Equal(got, data) {
		t.Fatal("read differs")
	}
	if err := h.Close(); err != nil {
		t.Fatal(err)
	}
	if n, resident := residentPages(t, h.o.path); resident != n {
		t.Errorf("%d of the data file's %d pages are in the page cache, want all", resident, n)
	}
}

// residentPages counts the pages of the file at path and those of them
// in the page cache.
func residentPages(t *testing.T, path string) (n, resident int) {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = f.Close() }()
	fi, err := f.Stat()
	if err != nil {
		t.Fatal(err)
	}
	mem, err := unix.Mmap(int(f.Fd()), 0, int(fi.Size()), unix.PROT_READ, unix.MAP_SHARED)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = unix.Munmap(mem) }()
	page := os.Getpagesize()
	vec := make([]byte, (len(mem)+page-1)/page)
	// x/sys/unix has no wrapper for mincore(2) on Linux.
	if _, _, errno := unix.Syscall(unix.SYS_MINCORE, uintptr(unsafe.Pointer(&mem[0])), uintptr(len(mem)), uintptr(unsafe.Pointer(&vec[0]))); errno != 0 {
		t.Fatal(errno)
	}
	for _, v := range vec {
		if v&1 != 0 {
			resident++
		}
	}
	return len(vec), resident
}

// TestBufferSizeBoundsBuffersAndGETs: the bufferSize setting bounds the
// block buffers of a pool and, at three quarters of it, the GETs the
// fetch tuner may keep in flight (within MaxParallelFetches).
func TestBufferSizeBoundsBuffersAndGETs(t *testing.T) {
	for _, tc := range []struct {
		name       string
		size       int64
		bufs, gets int
	}{
		{"default", 0, 32, 24},
		{"small", 32 << 20, 8, 6},
		{"large", 1 << 30, 256, DefaultMaxParallelFetches},
	} {
		t.Run(tc.name, func(t *testing.T) {
			opts := testOpts()
			opts.CacheBlockSize, opts.PartSize, opts.BufferSize = 4<<20, 8<<20, tc.size
			c, _, _ := newFixture(t, opts)
			if got := c.pool(opts.CacheBlockSize).maxBufs; got != tc.bufs {
				t.Errorf("pool bound %d buffers, want %d", got, tc.bufs)
			}
			if got := c.fetches.tune.hi; got != tc.gets {
				t.Errorf("GETs in flight at most %d, want %d", got, tc.gets)
			}
			if want := cmp.Or(tc.size, DefaultBufferSize); c.BufferBudget() != want {
				t.Errorf("BufferBudget %d, want %d", c.BufferBudget(), want)
			}
		})
	}
}

package cache

import (
	"bytes"
	"context"
	"os"
	"runtime"
	"testing"
	"time"

	"github.com/basin-csi/basin/pkg/objstore/objstoretest"
)

// TestLocalPathVerifiesWithBoundedMemory caches a many-block object,
// reopens the cache (blocks present but not verified, as after a
// remount) and asks for LocalPath: the verification it starts must hold
// at most verifyParallel block buffers at once and allocate far less than
// the object's size.
func TestLocalPathVerifiesWithBoundedMemory(t *testing.T) {
	opts := testOpts() // 64 KiB blocks
	const size = 16 * mib
	c, fake, dir := newFixture(t, opts)
	data := randBytes(40, size)
	info := put(t, fake, "big", data)
	readObject(t, c, info)
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	c = openTest(t, dir, fake, opts)
	defer func() { _ = c.Close() }()
	h := openObj(t, c, info)
	defer func() { _ = h.Close() }()
	if h.o.small || h.o.nblocks < 200 || !h.o.allPresent() || h.o.ready.has(0) {
		t.Fatalf("fixture: small %v, %d blocks, all present %v, block 0 ready %v", h.o.small, h.o.nblocks, h.o.allPresent(), h.o.ready.has(0))
	}
	fake.ResetCounters()

	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	if _, ok := h.LocalPath(); ok {
		t.Fatal("LocalPath of a large unverified object returned at once")
	}
	deadline := time.Now().Add(20 * time.Second)
	for !h.o.allReady() && time.Now().Before(deadline) {
		time.Sleep(2 * time.Millisecond)
	}
	runtime.ReadMemStats(&after)
	path, ok := h.LocalPath()
	if !ok {
		t.Fatal("no LocalPath after verification")
	}
	if got, err := os.ReadFile(path); err != nil || !bytes.Equal(got, data) {
		t.Fatalf("LocalPath file differs from the object (%v)", err)
	}
	if n := fake.Calls(objstoretest.OpRead); n != 0 {
		t.Errorf("%d GETs while verifying a fully cached object", n)
	}
	if peak := c.stats.verifyBufs.peak.Load(); peak < 1 || peak > int64(c.tune.verifyParallel) {
		t.Errorf("verification held %d block buffers at once, want 1..%d", peak, c.tune.verifyParallel)
	}
	// Generous: the old code allocated about one buffer per block.
	if alloc := after.TotalAlloc - before.TotalAlloc; alloc > size/8 {
		t.Errorf("verifying a %d MiB object allocated %d KiB", size/mib, alloc/kib)
	}
}

// TestVerificationStopsAtClose closes the cache while a large object is
// being verified: Close returns and nothing is left waiting.
func TestVerificationStopsAtClose(t *testing.T) {
	opts := testOpts()
	c, fake, dir := newFixture(t, opts)
	info := put(t, fake, "big", randBytes(41, 8*mib))
	readObject(t, c, info)
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	c = openTest(t, dir, fake, opts)
	h := openObj(t, c, info)
	defer func() { _ = h.Close() }()
	h.LocalPath() // starts verification
	flights := c.acquire(h.o, 0, h.o.nblocks-1, forRead)
	done := make(chan error, 1)
	go func() { done <- c.Close() }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Close hangs while verifying")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	for b, f := range flights {
		if f == nil {
			continue
		}
		select {
		case <-f.done:
		case <-ctx.Done():
			t.Fatalf("flight of block %d still open after Close", b)
		}
	}
	if _, ok := h.LocalPath(); ok {
		t.Error("LocalPath after Close")
	}
}

package cache

import (
	"context"
	"testing"
)

// trimAll trims every idle object from memory, as a warm pass over more
// objects than tuning.maxIdle does.
func trimAll(t *testing.T, c *Cache) {
	t.Helper()
	mustFlush(t, c)
	c.mu.Lock()
	maxIdle := c.tune.maxIdle
	c.tune.maxIdle = 0
	c.mu.Unlock()
	c.trimIdle(0)
	c.mu.Lock()
	defer c.mu.Unlock()
	c.tune.maxIdle = maxIdle
	if n := len(c.objs); n != 0 {
		t.Fatalf("fixture: %d objects still in memory after the trim", n)
	}
}

// TestTrimmedObjectStaysVerified: an object this process fetched whole and
// that was trimmed from memory is ready when it is opened again, so that
// the open reads nothing (no verification job); an object that was only
// partly cached is not remembered, and the remembered verification is used
// up by the load.
func TestTrimmedObjectStaysVerified(t *testing.T) {
	opts := testOpts() // 64 KiB blocks
	c, fake, _ := newFixture(t, opts)
	whole := put(t, fake, "whole", randBytes(50, 100*kib))
	part := put(t, fake, "part", randBytes(51, 1*mib))
	readObject(t, c, whole)
	h := openObj(t, c, part)
	if _, err := h.ReadAt(context.Background(), make([]byte, 10), 0); err != nil {
		t.Fatal(err)
	}
	_ = h.Close()
	trimAll(t, c)
	c.mu.Lock()
	remembered := len(c.verified)
	c.mu.Unlock()
	if remembered != 1 {
		t.Fatalf("%d objects remembered as verified, want 1 (the whole one)", remembered)
	}

	h = openObj(t, c, whole)
	if !h.o.allReady() {
		t.Error("a whole object verified before the trim is not ready when loaded again")
	}
	if _, ok := h.LocalPath(); !ok {
		t.Error("no LocalPath for a whole cached object")
	}
	_ = h.Close()
	if peak := c.stats.verifyBufs.peak.Load(); peak != 0 {
		t.Errorf("verification jobs ran (%d buffers) for objects this process fetched", peak)
	}
	c.mu.Lock()
	remembered = len(c.verified)
	c.mu.Unlock()
	if remembered != 0 {
		t.Errorf("%d objects still remembered after their load", remembered)
	}

	h = openObj(t, c, part)
	defer func() { _ = h.Close() }()
	if !h.o.present.has(0) || h.o.ready.has(0) {
		t.Errorf("partly cached object after the trim: block 0 present %v, ready %v; want present, not ready", h.o.present.has(0), h.o.ready.has(0))
	}
}

// TestVerifiedSetIsBounded: past tuning.maxVerified entries the set starts
// over instead of growing.
func TestVerifiedSetIsBounded(t *testing.T) {
	opts := testOpts()
	c, fake, _ := newFixture(t, opts)
	c.mu.Lock()
	c.tune.maxVerified = 2
	c.mu.Unlock()
	for i, key := range []string{"a", "b", "c"} {
		readObject(t, c, put(t, fake, key, randBytes(uint64(60+i), 10*kib)))
	}
	trimAll(t, c)
	c.mu.Lock()
	n := len(c.verified)
	c.mu.Unlock()
	if n < 1 || n > 2 {
		t.Errorf("%d objects remembered, want 1..2 (the bound)", n)
	}
}

package cache

import (
	"testing"
	"time"
)

func TestShortClass(t *testing.T) {
	for _, tc := range []struct{ n, want int64 }{
		{1, shortMin}, {shortMin, shortMin}, {shortMin + 1, 2 * shortMin},
		{128 << 10, 128 << 10}, {128<<10 + 1, 256 << 10},
	} {
		if got := shortClass(tc.n); got != tc.want {
			t.Errorf("shortClass(%d) = %d, want %d", tc.n, got, tc.want)
		}
	}
}

// A short buffer given back through the block pool is handed out again by
// the short pool of its class, and the pool's bytes count it.
func TestShortBuffersRecycled(t *testing.T) {
	p := newBufPool(4<<20, DefaultBufferSize, time.Hour)
	buf, bp := p.getShort(100 << 10)
	if bp == nil || len(buf) != 100<<10 || cap(*bp) != 128<<10 {
		t.Fatalf("getShort(100 KiB): len %d, pooled %v", len(buf), bp != nil)
	}
	if got := p.bytes(); got != 128<<10 {
		t.Errorf("bytes with one short buffer out = %d, want %d", got, 128<<10)
	}
	p.put(bp)
	if _, again := p.getShort(120 << 10); again != bp {
		t.Error("the short buffer put back was not handed out again")
	}
	if p.total != 0 {
		t.Errorf("the block pool counts %d buffers; short ones belong to the short pool", p.total)
	}
}

// At its bound a short pool hands out plain allocations and never waits.
func TestShortPoolBound(t *testing.T) {
	p := newBufPool(4<<20, DefaultBufferSize, time.Hour)
	class := shortClass(1 << 20)
	limit := int(shortPoolBytes / class)
	for i := range limit {
		if _, bp := p.getShort(1 << 20); bp == nil {
			t.Fatalf("buffer %d of %d not pooled", i, limit)
		}
	}
	buf, bp := p.getShort(1 << 20)
	if bp != nil || len(buf) != 1<<20 {
		t.Fatalf("beyond the bound: pooled %v, len %d; want a plain allocation", bp != nil, len(buf))
	}
	if got, want := p.bytes(), int64(shortPoolBytes); got != want {
		t.Errorf("bytes = %d, want %d", got, want)
	}
}

package cache

import (
	"testing"
	"time"
)

// TestSmallBuffersStayOutOfThePool: a short block's buffer has its
// block's length and its class's capacity, and putting it back neither
// counts it among the pool's buffers nor hands it out by get.
func TestSmallBuffersStayOutOfThePool(t *testing.T) {
	const size = 4 << 20
	p := newBufPool(size, time.Hour)
	for _, tc := range []struct{ n, wantCap int }{
		{1, 4 << 10},
		{4 << 10, 4 << 10},
		{128<<10 + 1, 256 << 10},
		{size/4 - 1, size / 4},
	} {
		b := p.getSmall(tc.n)
		if len(*b) != tc.n || cap(*b) != tc.wantCap {
			t.Errorf("getSmall(%d): len %d cap %d, want %d and %d", tc.n, len(*b), cap(*b), tc.n, tc.wantCap)
		}
		p.put(b)
	}
	if n := p.bytes(); n != 0 {
		t.Errorf("pool holds %d bytes after short buffers came back, want 0", n)
	}
	big := p.get()
	if cap(*big) != size {
		t.Errorf("get after short puts: cap %d, want %d", cap(*big), size)
	}
	p.put(big)
}

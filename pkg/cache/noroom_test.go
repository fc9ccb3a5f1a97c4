package cache

import (
	"bytes"
	"context"
	"testing"
)

// TestNoRoomNoReadAhead: while the cache has no room for blocks (here a
// capacity below one block), a sequential reader that prefetches like the
// FUSE layer is served from the bucket with each block fetched about
// once: blocks read ahead could not be kept, so read-ahead would fetch
// every block again when the reader reaches it.
func TestNoRoomNoReadAhead(t *testing.T) {
	opts := testOpts()
	opts.CacheSize = 32 * kib
	c, fake, _ := newFixture(t, opts)
	data := randBytes(330, 4*mib)
	info := put(t, fake, "big", data)
	h := openObj(t, c, info)
	defer func() { _ = h.Close() }()
	fake.ResetCounters()
	buf := make([]byte, 48*kib)
	var out []byte
	for off := int64(0); off < info.Size; off += int64(len(buf)) {
		h.Prefetch(off+int64(len(buf)), 512*kib)
		n, err := h.ReadAt(context.Background(), buf, off)
		if err != nil && n+int(off) != int(info.Size) {
			t.Fatalf("ReadAt(%d): %v", off, err)
		}
		out = append(out, buf[:n]...)
	}
	if !bytes.Equal(out, data) {
		t.Fatal("bytes differ")
	}
	if used := c.Stats().UsedBytes; used > opts.CacheSize {
		t.Errorf("used %d bytes, capacity %d", used, opts.CacheSize)
	}
	if got := fake.BytesRead(); got > info.Size*3/2 {
		t.Errorf("fetched %d bytes for a %d-byte object read once; want at most 1.5×", got, info.Size)
	}
}

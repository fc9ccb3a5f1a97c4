package fuse

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/basin-csi/basin/internal/directio"
	"github.com/basin-csi/basin/pkg/mountspec"
)

// The part pool never has more than its slots out, a get waits (within
// its context) for a put, and the buffers' memory goes back once none has
// been out for the idle time (the mapping stays: they read as zeros).
func TestPartPoolBound(t *testing.T) {
	p := newPartPool(5000, 2)
	p.idle = 20 * time.Millisecond
	a, err := p.get(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	b, err := p.get(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if len(a) != directio.Align*2 || !directio.OK(a, 0) {
		t.Errorf("buffer of %d bytes, aligned %v; want %d, aligned", len(a), directio.OK(a, 0), directio.Align*2)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 50*time.Millisecond)
	defer cancel()
	if _, err := p.get(ctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("third get with two slots: %v, want it to wait until its deadline", err)
	}
	a[0] = 7
	p.put(a)
	c, err := p.get(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if &c[0] != &a[0] {
		t.Errorf("the buffer put back was not reused while another was out")
	}
	time.Sleep(5 * p.idle)
	if c[0] != 7 {
		t.Errorf("a buffer's memory was dropped while another buffer was out")
	}
	p.put(b)
	p.put(c)
	for deadline := time.Now().Add(10 * time.Second); c[0] != 0; time.Sleep(p.idle) {
		if time.Now().After(deadline) {
			t.Fatal("the buffers' memory was not given back after the last part")
		}
	}
	if len(p.free) != 2 || p.out != 0 || len(p.slots) != 0 {
		t.Errorf("after the last put: %d free buffers, %d out, %d slots taken; want the 2 mappings kept, none out", len(p.free), p.out, len(p.slots))
	}
}

func TestPartSlots(t *testing.T) {
	for _, tc := range []struct {
		buffer, part int64
		parts, want  int
	}{
		{mountspec.DefaultBufferSize, 8 << 20, 16, 8}, // 128Mi: half of it
		{512 << 20, 8 << 20, 16, 16},                  // at most the parts in flight
		{16 << 20, 8 << 20, 16, 2},                    // at least 2
	} {
		if got := partSlots(tc.buffer, tc.part, tc.parts); got != tc.want {
			t.Errorf("partSlots(%d, %d, %d) = %d, want %d", tc.buffer, tc.part, tc.parts, got, tc.want)
		}
	}
}

// Aligned appends go to the disk directly and others are refused (the
// caller writes them through the page cache); a part reads back exactly
// what both wrote.
func TestStagedSourceWritesAndParts(t *testing.T) {
	file, err := os.OpenFile(filepath.Join(t.TempDir(), "1.1"), os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = file.Close() }()
	s := newStagedSource(file, newPartPool(64<<10, 2), 32<<10)
	defer s.close()
	if s.direct == nil {
		t.Fatal("no direct descriptor: the test directory's file system must allow O_DIRECT, as the cache's does")
	}
	if odd := newStagedSource(file, newPartPool(64<<10, 2), 5000); odd.direct != nil {
		t.Error("parts of 5000 bytes (not whole pages) and direct writes")
	}
	data := randomBytes(48<<10+100, 3)
	if !s.writeDirect(data[:32<<10], 0) {
		t.Fatal("an aligned 32 KiB append was not written directly")
	}
	if s.writeDirect(data[32<<10:48<<10+100], 32<<10) {
		t.Error("an unaligned length was written directly")
	}
	if s.writeDirect(data[100:100+8192], 100) {
		t.Error("an unaligned offset was written directly")
	}
	if s.writeDirect(make([]byte, maxRequest+directio.Align), 48<<10) {
		t.Error("a write larger than the copy buffer was written directly")
	}
	if _, err := file.WriteAt(data[32<<10:], 32<<10); err != nil { // as the caller does
		t.Fatal(err)
	}
	for _, r := range []struct{ off, n int64 }{{0, 32 << 10}, {32 << 10, 16<<10 + 100}, {0, int64(len(data))}} {
		got, release, err := s.ReadPart(t.Context(), r.off, r.n)
		if err != nil {
			t.Fatalf("ReadPart(%d, %d): %v", r.off, r.n, err)
		}
		if !bytes.Equal(got, data[r.off:r.off+r.n]) {
			t.Errorf("ReadPart(%d, %d): the bytes differ from those written", r.off, r.n)
		}
		release()
	}
	if _, _, err := s.ReadPart(t.Context(), 0, 128<<10); !errors.Is(err, errPartTooLarge) {
		t.Errorf("a part larger than the pool's buffers: %v, want errPartTooLarge", err)
	}
}

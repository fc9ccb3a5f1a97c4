package directio

import (
	"bytes"
	"errors"
	"io"
	"os"
	"path/filepath"
	"testing"
)

func TestBufIsAligned(t *testing.T) {
	for _, n := range []int{Align, 3 * Align, 1 << 20} {
		b := Buf(n)
		if len(b) != n || cap(b) != n || !OK(b, 0) {
			t.Errorf("Buf(%d): len %d cap %d aligned %v", n, len(b), cap(b), OK(b, 0))
		}
	}
}

func TestOK(t *testing.T) {
	b := Buf(2 * Align)
	for _, tc := range []struct {
		data []byte
		off  int64
		want bool
	}{
		{b, 0, true},
		{b, int64(Align), true},
		{b, 512, false},            // unaligned offset
		{b[:Align+1], 0, false},    // unaligned length
		{b[1 : Align+1], 0, false}, // unaligned memory
		{b[:0], 0, false},
	} {
		if got := OK(tc.data, tc.off); got != tc.want {
			t.Errorf("OK(len %d, off %d) = %v, want %v", len(tc.data), tc.off, got, tc.want)
		}
	}
	if RoundUp(1) != int64(Align) || RoundUp(int64(Align)) != int64(Align) || RoundUp(0) != 0 {
		t.Errorf("RoundUp: %d %d %d", RoundUp(1), RoundUp(int64(Align)), RoundUp(0))
	}
}

// A direct write through Reopen is what the buffered descriptor reads, and
// a direct read sees a buffered write (the kernel writes it back first).
func TestReopenRoundTrip(t *testing.T) {
	path := filepath.Join(t.TempDir(), "f")
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = f.Close() }()
	d, err := Reopen(f, os.O_RDWR)
	if err != nil {
		t.Fatalf("Reopen: %v (the test directory's file system must allow O_DIRECT, as the cache's does)", err)
	}
	defer func() { _ = d.Close() }()

	buf := Buf(2 * Align)
	for i := range buf {
		buf[i] = byte(i * 7)
	}
	if _, err := d.WriteAt(buf, 0); err != nil {
		t.Fatalf("direct write: %v", err)
	}
	got := make([]byte, len(buf))
	if _, err := f.ReadAt(got, 0); err != nil || !bytes.Equal(got, buf) {
		t.Fatalf("buffered read after a direct write: err %v, equal %v", err, bytes.Equal(got, buf))
	}
	tail := []byte("a buffered tail")
	if _, err := f.WriteAt(tail, int64(len(buf))); err != nil {
		t.Fatal(err)
	}
	back := Buf(3 * Align)
	n, err := d.ReadAt(back, 0)
	if err != nil && !errors.Is(err, io.EOF) {
		t.Fatalf("direct read: %v", err)
	}
	want := append(append([]byte(nil), buf...), tail...)
	if !bytes.Equal(back[:n], want) {
		t.Errorf("direct read got %d bytes, want the %d written (direct then buffered)", n, len(want))
	}
	// ReadAt: a part ending inside the last page, one past the end, and
	// an unaligned buffer.
	part := Buf(3 * Align)
	if err := ReadAt(d, part, int64(Align), int64(Align+len(tail))); err != nil || !bytes.Equal(part[:Align+len(tail)], want[Align:]) {
		t.Errorf("ReadAt of the last page and the tail: %v, equal %v", err, bytes.Equal(part[:Align+len(tail)], want[Align:]))
	}
	if err := ReadAt(d, part, 0, int64(len(want)+1)); !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Errorf("ReadAt past the end: %v, want io.ErrUnexpectedEOF", err)
	}
	if err := ReadAt(d, part[1:], 0, 10); !errors.Is(err, ErrUnaligned) {
		t.Errorf("ReadAt into an unaligned buffer: %v, want ErrUnaligned", err)
	}
}

func TestAllocFree(t *testing.T) {
	b, err := Alloc(1 << 20)
	if err != nil {
		t.Fatal(err)
	}
	if len(b) != 1<<20 || !OK(b, 0) {
		t.Errorf("Alloc: len %d aligned %v", len(b), OK(b, 0))
	}
	b[len(b)-1] = 1
	Drop(b) // the memory goes, the mapping stays
	if b[len(b)-1] != 0 {
		t.Errorf("after Drop the buffer reads %d, want 0", b[len(b)-1])
	}
	Free(b)
}

// Package directio moves file data with O_DIRECT: a DMA between the disk
// and page-aligned memory, with no page cache in between.
//
// On the machines Basin runs on (virtual machines whose memory is touched
// for the first time by the page cache), a buffered write of a large file
// costs several times the CPU of receiving its bytes from the network:
// page allocation, the copy, dirty accounting and the writeback. A direct
// write or read of the same bytes costs a fraction of it. The cache writes
// its blocks this way and the FUSE layer the staged files it streams.
//
// The contract:
//   - Reopen opens a second descriptor of an open file's own inode (never
//     its path, which a rename may have reused) with O_DIRECT;
//   - only data for which OK holds goes through it; everything else, and
//     everything after a direct call returned EINVAL (a file system that
//     refuses direct I/O), goes through the buffered descriptor;
//   - buffers come from Alloc, page aligned and outside the Go heap, and
//     go back with Free.
//
// The kernel keeps the page cache coherent with direct I/O of whole
// pages: a direct read writes dirty pages of its range back first, a
// direct write drops the cached pages of its range. Callers keep a page
// from being read through the page cache while it is written directly.
package directio

import (
	"errors"
	"fmt"
	"io"
	"os"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/basin-csi/basin/internal/regfile"
)

// Align is the alignment direct I/O needs of buffers, offsets and lengths:
// the largest logical block size in use (4 KiB sectors) and at least a
// page, so that no page of the page cache spans data moved directly and
// data moved through it.
var Align = max(4096, os.Getpagesize())

// OK reports whether data may be written or read directly at off.
func OK(data []byte, off int64) bool {
	return len(data) > 0 && len(data)%Align == 0 && off%int64(Align) == 0 &&
		uintptr(unsafe.Pointer(unsafe.SliceData(data)))%uintptr(Align) == 0
}

// RoundUp is n rounded up to a multiple of Align.
func RoundUp(n int64) int64 {
	a := int64(Align)
	return (n + a - 1) / a * a
}

// ReadAt reads n bytes at off of d, a descriptor from Reopen, into the
// start of buf with one direct read of whole pages (buf holds them: n
// rounded up to Align). An error means it could not: buf too small or
// unaligned (ErrUnaligned), a short read, or the read's own error, such
// as EINVAL from a file system that refuses direct reads.
func ReadAt(d *os.File, buf []byte, off, n int64) error {
	rn := RoundUp(n)
	if rn > int64(len(buf)) || !OK(buf[:rn], off) {
		return ErrUnaligned
	}
	got, err := d.ReadAt(buf[:rn], off)
	switch {
	case int64(got) >= n:
		return nil // the end of the file may come before the page's
	case err == nil || errors.Is(err, io.EOF):
		return io.ErrUnexpectedEOF
	}
	return err
}

// ErrUnaligned: the buffer or offset does not suit direct I/O.
var ErrUnaligned = errors.New("directio: buffer or offset not aligned")

// Reopen opens f's inode again with flag (os.O_RDONLY, os.O_WRONLY or
// os.O_RDWR) and O_DIRECT. It fails where the file system refuses direct
// I/O at open (ramfs); some refuse it only at the first read or write
// (EINVAL).
func Reopen(f *os.File, flag int) (*os.File, error) {
	return regfile.Open(fmt.Sprintf("/proc/self/fd/%d", f.Fd()), flag|unix.O_DIRECT, 0)
}

// Alloc returns n bytes of page-aligned memory outside the Go heap: never
// scanned or zeroed by the garbage collector, and faulted in at once
// (MAP_POPULATE) rather than page by page on first touch.
func Alloc(n int) ([]byte, error) {
	return unix.Mmap(-1, 0, n, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_ANON|unix.MAP_PRIVATE|unix.MAP_POPULATE)
}

// Free returns memory from Alloc. b must not be used after.
func Free(b []byte) {
	_ = unix.Munmap(b)
}

// Buf returns n bytes of Go memory aligned for direct I/O: for buffers
// that must stay valid memory after their owner is done with them (an
// HTTP transport may still read a failed request's body), where Alloc's
// mappings would be unmapped.
func Buf(n int) []byte {
	b := make([]byte, n+Align)
	skip := (Align - int(uintptr(unsafe.Pointer(unsafe.SliceData(b)))%uintptr(Align))) % Align
	return b[skip : skip+n : skip+n]
}

// Drop gives the physical memory of b, from Alloc, back to the system and
// keeps the mapping: b stays valid memory and reads as zeros until it is
// written again. For pools whose buffers may still be read by someone
// late, where Free could make that read fault.
func Drop(b []byte) {
	_ = unix.Madvise(b, unix.MADV_DONTNEED)
}

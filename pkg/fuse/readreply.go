package fuse

import (
	"os"

	gofuse "github.com/hanwen/go-fuse/v2/fuse"
	"github.com/hanwen/go-fuse/v2/splice"
)

// Read replies. go-fuse sends a reply it cannot write as a vector by
// trying a splice first: a byte-slice result (ReadResultData) costs a
// pipe from the pool, a write of the header into it, a splice of it to
// /dev/null and an ioctl before the plain writev, three system calls per
// READ for nothing; and a descriptor result larger than the pipe
// (pipe-max-size, 1 MiB by default, while READs are up to 1 MiB plus the
// header) fails the splice, logs the failure and falls back to a pread.
// These helpers hand go-fuse only what it can send directly.

// vectored is go-fuse's interface of a result it writes with one writev.
type vectored interface {
	Slices() ([][]byte, gofuse.Status)
}

// dataReply is b as a read result go-fuse writes with one writev.
func dataReply(b []byte) gofuse.ReadResult {
	return gofuse.ReadResultVector([][]byte{b})
}

// spliceMargin is what a spliced reply needs in the pipe beyond its data:
// the reply header and the page go-fuse adds.
const spliceMargin = 64 << 10

// fileReply is n bytes of f at off as a read result: spliced from f when
// the reply fits the pipe, else read into dest (len(dest) >= n) and sent
// as data. f must stay open until go-fuse has sent the reply.
func fileReply(f *os.File, dest []byte, off int64, n int) (gofuse.ReadResult, error) {
	if n+spliceMargin <= splice.MaxPipeSize() {
		return gofuse.ReadResultFd(f.Fd(), off, n), nil
	}
	got, err := f.ReadAt(dest[:n], off)
	if err != nil && got < n {
		return nil, err
	}
	return dataReply(dest[:got]), nil
}

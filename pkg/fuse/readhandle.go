package fuse

import (
	"context"
	"errors"
	"io"
	"os"
	"sync"
	"syscall"

	"github.com/hanwen/go-fuse/v2/fs"
	gofuse "github.com/hanwen/go-fuse/v2/fuse"
)

// readHandle is a file opened read-only on one pinned object version.
type readHandle struct {
	// constant
	node  *fileNode
	oh    objectHandle
	pt    *os.File // backing file when opened in passthrough mode
	local *os.File // complete data file for spliced user-space reads
	ownPT bool     // pt was opened for this handle; else it is oh's

	mu  sync.Mutex
	det seqDetector // guarded by mu
}

var (
	_ fs.FilePassthroughFder = (*readHandle)(nil)
	_ fs.FileReader          = (*readHandle)(nil)
	_ fs.FileReleaser        = (*readHandle)(nil)
	_ fs.FileFsyncer         = (*readHandle)(nil)
	_ fs.FileFlusher         = (*readHandle)(nil)
)

// PassthroughFd hands the kernel the cache's data file. go-fuse calls it
// once, right after Open.
func (h *readHandle) PassthroughFd() (int, bool) {
	if h.pt == nil {
		return 0, false
	}
	return int(h.pt.Fd()), true
}

// Read serves reads the kernel did not pass through: spliced from the
// complete data file, else through the cache, which fetches missing blocks.
func (h *readHandle) Read(ctx context.Context, dest []byte, off int64) (gofuse.ReadResult, syscall.Errno) {
	size := h.oh.Info().Size
	if off >= size || len(dest) == 0 {
		return dataReply(nil), 0
	}
	n := int(min(int64(len(dest)), size-off))
	for _, f := range []*os.File{h.local, h.pt} {
		if f != nil {
			// pt is only read here if registering the backing file failed.
			res, err := fileReply(f, dest, off, n)
			if err != nil {
				return nil, h.node.fsys.errno("read", h.oh.Info().Key, err)
			}
			h.node.fsys.counters.userReadBytes.Add(int64(n))
			return res, 0
		}
	}
	window := h.oh.PrefetchWindow()
	h.mu.Lock()
	pfOff, pfLen := h.det.observe(off, int64(n), size, window)
	h.mu.Unlock()
	if pfLen > 0 {
		h.oh.Prefetch(pfOff, pfLen)
	}
	ctx, cancel := h.node.fsys.opContext(ctx)
	defer cancel()
	got, err := h.oh.ReadAt(ctx, dest[:n], off)
	if err != nil && (!errors.Is(err, io.EOF) || got == 0) {
		return nil, h.node.fsys.errno("read", h.oh.Info().Key, err)
	}
	h.node.fsys.counters.userReadBytes.Add(int64(got))
	return dataReply(dest[:got]), 0
}

// Release unpins the object (which closes its data file when the cache
// lets it go).
func (h *readHandle) Release(context.Context) syscall.Errno {
	if h.ownPT {
		_ = h.pt.Close()
	}
	_ = h.oh.Close()
	h.node.closeRead(h.pt != nil)
	return 0
}

// Flush has nothing to do for a read-only handle; read handles are opened
// with FOPEN_NOFLUSH, so the kernel does not even ask.
func (h *readHandle) Flush(context.Context) syscall.Errno {
	h.node.fsys.counters.readFlushes.Add(1)
	return 0
}

// Fsync has nothing to persist for a read-only handle.
func (h *readHandle) Fsync(context.Context, uint32) syscall.Errno { return 0 }

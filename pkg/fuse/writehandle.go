package fuse

import (
	"context"
	"syscall"

	"github.com/hanwen/go-fuse/v2/fs"
	gofuse "github.com/hanwen/go-fuse/v2/fuse"
)

// writeHandle is a file opened for writing, or opened for reading while the
// file is being written here. All handles of an inode share its writeState.
// It deliberately has no PassthroughFd: written files are never backed by
// the cache's data file.
type writeHandle struct {
	// constant
	node     *fileNode
	w        *writeState
	writable bool
	readable bool
}

var (
	_ fs.FileReader    = (*writeHandle)(nil)
	_ fs.FileWriter    = (*writeHandle)(nil)
	_ fs.FileFlusher   = (*writeHandle)(nil)
	_ fs.FileFsyncer   = (*writeHandle)(nil)
	_ fs.FileReleaser  = (*writeHandle)(nil)
	_ fs.FileGetattrer = (*writeHandle)(nil)
)

func (h *writeHandle) keyForLog() string {
	k, _ := h.node.key()
	return k
}

func (h *writeHandle) Getattr(_ context.Context, out *gofuse.AttrOut) syscall.Errno {
	h.node.fillAttr(&out.Attr)
	return 0
}

func (h *writeHandle) Read(ctx context.Context, dest []byte, off int64) (gofuse.ReadResult, syscall.Errno) {
	if !h.readable {
		return nil, syscall.EBADF
	}
	n, err := h.w.readAt(ctx, dest, off)
	if err != nil {
		return nil, h.node.fsys.errno("read", h.keyForLog(), err)
	}
	return dataReply(dest[:n]), 0
}

func (h *writeHandle) Write(ctx context.Context, data []byte, off int64) (uint32, syscall.Errno) {
	if !h.writable {
		return 0, syscall.EBADF
	}
	if err := h.w.write(ctx, data, off); err != nil {
		return 0, h.node.fsys.errno("write", h.keyForLog(), err)
	}
	return uint32(len(data)), 0
}

// Flush runs at every close(2) of a descriptor: the data written so far is
// uploaded and close reports the result.
//
// The upload ignores the kernel's interrupts (a signal to the writer, such
// as the Go runtime's preemption signals, or one resent with the request
// after a takeover): close(2) is never retried by its callers, so EINTR
// would turn a working upload into an error. It stays bounded by the
// transfer timeout.
//
// With uploadMode async the close returns once the content is staged and
// acknowledged, and the upload follows in the background (writeasync.go);
// over the bounds it uploads here as in sync mode.
func (h *writeHandle) Flush(ctx context.Context) syscall.Errno {
	if !h.writable {
		return 0
	}
	ctx = context.WithoutCancel(ctx)
	if h.node.fsys.uploadsAfterClose() {
		staged, err := h.w.stageAsync(ctx)
		if err != nil {
			return h.node.fsys.errno("flush", h.keyForLog(), err)
		}
		if staged {
			return 0
		}
	}
	if err := h.w.upload(ctx); err != nil {
		return h.node.fsys.errno("flush", h.keyForLog(), err)
	}
	return 0
}

// Fsync uploads like Flush, and like it ignores interrupts; it never
// returns before the upload. On a read handle it uploads content a close
// acknowledged (uploadMode async), if still pending; in sync mode there
// is none, and it returns at once as it always did.
func (h *writeHandle) Fsync(ctx context.Context, _ uint32) syscall.Errno {
	if !h.writable {
		if !h.node.fsys.uploadsAfterClose() {
			return 0
		}
		if err := h.w.uploadAcked(context.WithoutCancel(ctx)); err != nil {
			return h.node.fsys.errno("fsync", h.keyForLog(), err)
		}
		return 0
	}
	if err := h.w.upload(context.WithoutCancel(ctx)); err != nil {
		return h.node.fsys.errno("fsync", h.keyForLog(), err)
	}
	return 0
}

func (h *writeHandle) Release(context.Context) syscall.Errno {
	n := h.node
	n.mu.Lock()
	n.userOpens--
	n.mu.Unlock()
	n.releaseWrite(h.w, !h.writable)
	return 0
}

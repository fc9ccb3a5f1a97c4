package fuse

import (
	"context"
	"errors"
	"os"
	"sync"
	"syscall"
	"time"

	"github.com/hanwen/go-fuse/v2/fs"
	gofuse "github.com/hanwen/go-fuse/v2/fuse"
	"k8s.io/klog/v2"

	"github.com/basin-csi/basin/internal/mountdefaults"
	"github.com/basin-csi/basin/internal/regfile"
	"github.com/basin-csi/basin/pkg/objstore"
)

// fileNode is a regular file: an object, or a file being written.
type fileNode struct {
	fs.Inode
	fsys    *FS
	revived string // constant: the path of a node revived by number, else ""

	mu sync.Mutex
	// guarded by mu
	info        objstore.ObjectInfo // last known attributes in the bucket
	meta        map[string]string   // the object's user metadata (posixmeta.go); nil: unknown or none
	keepVersion string              // version the kernel page cache may hold
	userOpens   int                 // handles served in user space (readers and writers)
	ptOpens     int                 // handles served by FUSE passthrough
	ptPath      string              // backing file of the passthrough opens
	ptClosed    chan struct{}       // closed when ptOpens drops to 0 (ptrelease.go); nil: nobody waits
	w           *writeState         // non-nil while written or read through a staged copy
	finishing   *writeState         // the write state its last release is finishing (install into the cache)
	// INVARIANT: userOpens == 0 || ptOpens == 0 (the kernel refuses to mix).
}

var (
	_ fs.NodeGetattrer   = (*fileNode)(nil)
	_ fs.NodeSetattrer   = (*fileNode)(nil)
	_ fs.NodeOpener      = (*fileNode)(nil)
	_ fs.NodeStatfser    = (*fileNode)(nil)
	_ fs.NodeReader      = (*fileNode)(nil)
	_ fs.NodeFlusher     = (*fileNode)(nil)
	_ fs.NodeOnForgetter = (*fileNode)(nil)
)

// Read serves a READ: through its file handle, or by inode when the
// kernel opened the file itself (OpenKernel, inoderead.go).
func (n *fileNode) Read(ctx context.Context, fh fs.FileHandle, dest []byte, off int64) (gofuse.ReadResult, syscall.Errno) {
	if r, ok := fh.(fs.FileReader); ok {
		return r.Read(ctx, dest, off)
	}
	if fh != nil {
		return nil, syscall.EBADF
	}
	return n.fsys.inodeReads.read(ctx, n, dest, off)
}

// Flush flushes through the file handle. A file the kernel opened itself
// (OpenKernel) has nothing to flush: ENOSYS makes the kernel stop sending
// FLUSH at close(2) for the whole connection, a round trip less per file
// (only regular files of a read-only mount are ever flushed there).
func (n *fileNode) Flush(ctx context.Context, fh fs.FileHandle) syscall.Errno {
	if f, ok := fh.(fs.FileFlusher); ok {
		return f.Flush(ctx)
	}
	if fh == nil && n.fsys.cfg.OpenMode == mountdefaults.OpenKernel {
		n.fsys.counters.readFlushes.Add(1)
		return syscall.ENOSYS
	}
	return 0
}

// OnForget closes the node's inode readers: the kernel forgot the inode.
func (n *fileNode) OnForget() { n.fsys.inodeReads.forget(n) }

func (n *fileNode) key() (string, bool) { return n.fsys.keyOf(n.EmbeddedInode()) }

// setInfo records fresh bucket attributes unless a local write is pending.
// In OpenKernel mode a new version also closes the node's inode readers and
// drops its pages in the kernel: the kernel keeps them across opens and
// drops them by itself only for a new size or modification time, and an
// overwrite of the same size within the same second (S3's time
// resolution) has neither. Sent before the attributes are answered, so the
// read that asked for them finds no stale page.
func (n *fileNode) setInfo(info objstore.ObjectInfo) {
	n.mu.Lock()
	old := n.info
	if n.w == nil {
		n.info = info
	}
	n.mu.Unlock()
	if n.fsys.cfg.OpenMode == mountdefaults.OpenKernel && old.Key != "" && !sameVersion(old, info) {
		n.fsys.inodeReads.forget(n)
		_ = n.NotifyContent(0, 0) // ENOENT if the kernel does not know the inode
	}
}

// currentInfo is what the node looks like now, local writes included.
func (n *fileNode) currentInfo() objstore.ObjectInfo {
	n.mu.Lock()
	info, w := n.info, n.w
	n.mu.Unlock()
	if w != nil {
		info.Size = w.size.Load()
		info.ModTime = time.Unix(0, w.mtime.Load())
	} else if size, ok := n.fsys.writes.size(n.StableAttr().Ino); ok {
		info.Size = size // written by a dead predecessor, not adopted yet
	}
	return info
}

// pendingWrite reports whether the file is being written here, or its
// upload after close is pending (uploadMode: async).
func (n *fileNode) pendingWrite() bool {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.w != nil && (n.w.writers.Load() > 0 || n.w.queued.Load())
}

func (n *fileNode) fillAttr(out *gofuse.Attr) {
	info := n.currentInfo()
	n.mu.Lock()
	meta, writing := n.meta, n.w != nil
	n.mu.Unlock()
	n.fsys.fillFileAttr(out, info.Size, info.ModTime)
	applyPosix(out, parsePosix(meta), !writing)
}

// setMeta records the object's metadata, unless a local write is pending
// (its own metadata then goes up with it).
func (n *fileNode) setMeta(meta map[string]string, known bool) {
	if !known {
		return
	}
	n.mu.Lock()
	if n.w == nil {
		n.meta = meta
	}
	n.mu.Unlock()
}

func (n *fileNode) Statfs(_ context.Context, out *gofuse.StatfsOut) syscall.Errno {
	n.fsys.statfs(out)
	return 0
}

// Getattr revalidates the attributes through the cache (which answers from
// its index while fresh); a file being written reports its staged size.
func (n *fileNode) Getattr(ctx context.Context, fh fs.FileHandle, out *gofuse.AttrOut) syscall.Errno {
	if h, ok := fh.(*readHandle); ok {
		// fstat, and the kernel's revalidation before reads (auto inval
		// data): an open file is its pinned version. No request, so a
		// TTL of 0 does not cost one round trip per read(2).
		info := h.oh.Info()
		n.fsys.fillFileAttr(&out.Attr, info.Size, info.ModTime)
		n.mu.Lock()
		meta := n.meta
		n.mu.Unlock()
		applyPosix(&out.Attr, parsePosix(meta), true)
		if _, linked := n.key(); !linked {
			out.Nlink = 0
		}
		return 0
	}
	n.mu.Lock()
	local := n.w != nil
	n.mu.Unlock()
	if _, staged := n.fsys.writes.size(n.StableAttr().Ino); staged {
		local = true
	}
	key, ok := n.key()
	if local || !ok {
		// Being written, or unlinked while open: answer from memory.
		n.fillAttr(&out.Attr)
		if !ok {
			out.Nlink = 0
		}
		return 0
	}
	ctx, cancel := n.fsys.opContext(ctx)
	defer cancel()
	info, err := n.fsys.cache.Stat(ctx, key)
	if err != nil {
		n.mu.Lock()
		open := n.userOpens+n.ptOpens > 0
		n.mu.Unlock()
		if open && errors.Is(err, objstore.ErrNotFound) {
			n.fillAttr(&out.Attr) // deleted in the bucket but still open here
			return 0
		}
		return n.fsys.errno("getattr", key, err)
	}
	n.setInfo(info)
	meta, known := n.fsys.objectMeta(ctx, info)
	n.setMeta(meta, known)
	n.fillAttr(&out.Attr)
	return 0
}

// Setattr implements truncate, and records mode, owner and modification
// time changes in the object's metadata (setattr.go).
func (n *fileNode) Setattr(ctx context.Context, fh fs.FileHandle, in *gofuse.SetAttrIn, out *gofuse.AttrOut) syscall.Errno {
	if n.fsys.cfg.ReadOnly {
		return syscall.EROFS
	}
	if size, ok := in.GetSize(); ok {
		if errno := n.truncate(ctx, fh, int64(size)); errno != 0 {
			return errno
		}
	}
	if errno := n.setPosix(ctx, in); errno != 0 {
		return errno
	}
	n.fillAttr(&out.Attr)
	return 0
}

// truncate changes the size through the shared write state. Without an
// open handle (truncate(2)) the result is uploaded before returning.
func (n *fileNode) truncate(ctx context.Context, fh fs.FileHandle, size int64) syscall.Errno {
	key, _ := n.key()
	n.awaitPassthroughClosed()
	w, errno := n.acquireWrite()
	if errno != 0 {
		return errno
	}
	defer n.releaseWrite(w, false)
	if err := w.truncate(ctx, size); err != nil {
		return n.fsys.errno("truncate", key, err)
	}
	if _, isHandle := fh.(*writeHandle); !isHandle {
		if err := w.upload(ctx); err != nil {
			return n.fsys.errno("truncate", key, err)
		}
	}
	return 0
}

// acquireWrite returns the node's write state, creating it from the
// object's current attributes, with one more writer reference.
func (n *fileNode) acquireWrite() (*writeState, syscall.Errno) {
	key, ok := n.key()
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.ptOpens > 0 {
		// The inode is open in passthrough mode on the cache's data
		// file; the kernel would refuse (or misdirect) a cached open.
		return nil, syscall.ETXTBSY
	}
	if n.w == nil && !n.adoptLocked() {
		base := n.info
		if base.Key != "" && ok {
			base.Key = key // the node may have been renamed
		}
		n.w = newWriteState(n, n.StableAttr().Ino, base)
	}
	if n.w == nil {
		return nil, syscall.EIO // a staged file that could not be adopted
	}
	n.w.refs++
	n.w.writers.Add(1)
	return n.w, 0
}

// acquireReadLocked returns the write state for a reader, if there is one,
// with one more reference. The caller holds n.mu. A reader never adopts a
// dead predecessor's staged file: its last release would upload the
// content of a writer that has not closed yet.
func (n *fileNode) acquireReadLocked() *writeState {
	if n.w != nil {
		n.w.refs++
	}
	return n.w
}

// adoptLocked makes the staged file a dead predecessor left for this
// inode its write state (stagedwrites.go). It reports whether there was one;
// n.w stays nil if it could not be opened, which fails the open rather
// than serve the bucket's older content. The caller holds n.mu.
func (n *fileNode) adoptLocked() bool {
	ino := n.StableAttr().Ino
	path, ok := n.fsys.writes.take(ino)
	if !ok {
		return false
	}
	w := newWriteState(n, ino, n.info)
	if err := w.adopt(path); err != nil {
		klog.ErrorS(err, "adopting the staged file of a file being written", "volume", n.fsys.cfg.VolumeID, "ino", ino)
		return true
	}
	klog.V(2).InfoS("adopted a file being written", "volume", n.fsys.cfg.VolumeID, "ino", ino, "size", w.size.Load())
	n.w = w
	return true
}

// releaseWrite drops a reference; the last one finishes the write state
// (final upload if needed, install into the cache, cleanup).
func (n *fileNode) releaseWrite(w *writeState, reader bool) {
	n.mu.Lock()
	w.refs--
	if !reader {
		w.writers.Add(-1)
	}
	last := w.refs == 0
	if last && n.w == w {
		n.w = nil
	}
	if last {
		n.finishing = w
	}
	n.mu.Unlock()
	if !last {
		return
	}
	w.finish()
	n.mu.Lock()
	if n.finishing == w {
		n.finishing = nil
	}
	n.mu.Unlock()
}

// writeStates are the node's write state and the one its last release is
// finishing, if any: an unlink or rename must stop the latter from
// installing the old name's attributes after the change.
func (n *fileNode) writeStates() (w, finishing *writeState) {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.w, n.finishing
}

// Open pins the object for reading, or joins/creates the write state.
// In OpenKernel mode a read-only open answers ENOSYS: the kernel then
// opens every file of the connection itself (inoderead.go).
func (n *fileNode) Open(ctx context.Context, flags uint32) (fs.FileHandle, uint32, syscall.Errno) {
	n.fsys.counters.opens.Add(1)
	acc := flags & syscall.O_ACCMODE
	writing := acc != syscall.O_RDONLY || flags&syscall.O_TRUNC != 0
	if writing {
		if n.fsys.cfg.ReadOnly {
			return nil, 0, syscall.EROFS
		}
		return n.openWrite(ctx, flags)
	}
	if n.fsys.cfg.OpenMode == mountdefaults.OpenKernel {
		return nil, 0, syscall.ENOSYS
	}
	for attempt := 0; ; attempt++ {
		n.mu.Lock()
		if w := n.acquireReadLocked(); w != nil {
			n.userOpens++
			n.mu.Unlock()
			return &writeHandle{node: n, w: w, readable: true}, 0, 0
		}
		info := n.info
		n.mu.Unlock()
		key, ok := n.key()
		if info.Key == "" || !ok {
			return nil, 0, syscall.ENOENT // unlinked or never uploaded
		}
		info.Key = key // the node may have been renamed
		h, flags, errno, retry := n.openRead(ctx, info, attempt)
		if !retry {
			return h, flags, errno
		}
	}
}

func (n *fileNode) openWrite(ctx context.Context, flags uint32) (fs.FileHandle, uint32, syscall.Errno) {
	key, _ := n.key()
	n.mu.Lock()
	info, metaKnown := n.info, n.meta != nil || n.w != nil
	n.mu.Unlock()
	if !metaKnown && info.Key != "" && key != "" {
		// The new version keeps the object's mode and times: learn them
		// before the upload replaces the object (one HEAD, only for
		// objects whose metadata nobody told yet).
		info.Key = key
		octx, cancel := n.fsys.opContext(ctx)
		meta, known := n.fsys.objectMetaAsk(octx, info)
		cancel()
		n.setMeta(meta, known)
	}
	n.awaitPassthroughClosed()
	w, errno := n.acquireWrite()
	if errno != 0 {
		return nil, 0, errno
	}
	n.mu.Lock()
	n.userOpens++
	n.mu.Unlock()
	h := &writeHandle{node: n, w: w, writable: true, readable: flags&syscall.O_ACCMODE == syscall.O_RDWR}
	if flags&syscall.O_TRUNC != 0 {
		if err := w.truncate(ctx, 0); err != nil {
			_ = h.Release(ctx)
			return nil, 0, n.fsys.errno("open", key, err)
		}
	}
	return h, 0, 0
}

// readOpenFlags are the open flags of every read handle: a read-only
// handle has nothing to do at close(2), so the kernel sends no FLUSH (one
// round trip less per file; the RELEASE that follows is asynchronous).
const readOpenFlags = gofuse.FOPEN_NOFLUSH

// openRead pins info in the cache and chooses passthrough or user space.
// retry asks Open to start over (a writer appeared, or the object changed).
func (n *fileNode) openRead(ctx context.Context, info objstore.ObjectInfo, attempt int) (_ fs.FileHandle, _ uint32, _ syscall.Errno, retry bool) {
	octx, cancel := n.fsys.opContext(ctx)
	defer cancel()
	oh, err := n.fsys.cache.OpenObject(octx, info)
	if errors.Is(err, objstore.ErrPreconditionFailed) && attempt == 0 {
		// Our attributes are stale: refresh them and try once more.
		if fresh, serr := n.fsys.cache.Stat(octx, info.Key); serr == nil {
			n.setInfo(fresh)
			return nil, 0, 0, true
		}
	}
	if err != nil {
		return nil, 0, n.fsys.errno("open", info.Key, err), false
	}
	local, hasLocal := oh.LocalFile()
	ptOK := hasLocal && n.fsys.passthroughFor(n.StableAttr().Ino)

	n.mu.Lock()
	defer n.mu.Unlock()
	if n.w != nil {
		_ = oh.Close()
		return nil, 0, 0, true
	}
	// The cache's own descriptor of the data file serves spliced reads and
	// is the passthrough backing file: the kernel opens the backing file
	// anew for every passthrough open, so its access mode does not matter.
	h := &readHandle{node: n, oh: oh, det: newSeqDetector(MinPrefetch, n.fsys.cfg.ReadAhead, prefetchStep)}
	switch {
	case n.ptOpens > 0:
		// Every open of an inode with a backing file must use it (go-fuse
		// hands the kernel the registered one; h.pt is a fallback).
		h.pt = local
		if !hasLocal || local.Name() != n.ptPath {
			file, err := regfile.Open(n.ptPath, os.O_RDONLY, 0)
			if err != nil {
				_ = oh.Close()
				return nil, 0, n.fsys.errno("open", info.Key, err), false
			}
			h.pt, h.ownPT = file, true
		}
		n.ptOpens++
		n.fsys.counters.ptOpens.Add(1)
		return h, readOpenFlags, 0, false
	case ptOK && n.userOpens == 0:
		h.pt = local
		n.ptOpens++
		n.ptPath = local.Name()
		n.fsys.counters.ptOpens.Add(1)
		return h, readOpenFlags, 0, false
	}
	fuseFlags := uint32(readOpenFlags)
	if hasLocal {
		h.local = local // spliced reads
	}
	v := oh.Info().Version
	if v != "" && v == n.keepVersion {
		fuseFlags |= gofuse.FOPEN_KEEP_CACHE
	}
	n.keepVersion = v
	n.userOpens++
	n.fsys.counters.userOpens.Add(1)
	return h, fuseFlags, 0, false
}

// closeRead undoes the accounting of a read handle.
func (n *fileNode) closeRead(passthrough bool) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if passthrough {
		n.ptOpens--
		if n.ptOpens == 0 {
			n.ptPath = ""
		}
		n.passthroughClosedLocked()
	} else {
		n.userOpens--
	}
}

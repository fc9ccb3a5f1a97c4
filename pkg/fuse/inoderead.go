package fuse

import (
	"container/list"
	"context"
	"errors"
	"slices"
	"sync"
	"syscall"

	gofuse "github.com/hanwen/go-fuse/v2/fuse"

	"github.com/basin-csi/basin/pkg/objstore"
)

// In OpenKernel mode (Config.OpenMode) the first OPEN of a regular file is
// answered with ENOSYS; the kernel then opens every file of the connection
// itself, with FOPEN_KEEP_CACHE and file handle 0, and sends no OPEN and no
// RELEASE. A warm open is as cheap as a local one; a read that misses the
// page cache arrives as a READ without a handle and is served here by
// inode, through a few cache handles kept per inode.
//
// The page cache stays coherent through the attributes: the kernel
// revalidates them before a read once the metadata TTL has passed
// (FUSE_AUTO_INVAL_DATA, which go-fuse negotiates), and a new size or
// modification time drops the inode's pages. A READ then finds the node's
// attributes at a new version and reopens its handles on it. Unlike an
// OPEN, which pins one version for the life of the open file, a reader
// that spans a change may see both versions: the mode is for data that is
// not overwritten while it is read (training sets), and only for
// read-only mounts (a writer would get no OPEN and no RELEASE either).

// Bounds of the handles serving READs without a file handle. Every handle
// pins its object in the cache and holds a descriptor of its data file.
const (
	// inodeReadersPerInode lets that many readers of one file at distant
	// offsets keep their own sequential-read detection.
	inodeReadersPerInode = 4
	// inodeReadersTotal bounds the handles of the whole mount; the least
	// recently used one beyond it is closed.
	inodeReadersTotal = 256
)

// inodeReader is one cache handle serving READs of a node by inode.
type inodeReader struct {
	// constant
	node *fileNode
	h    *readHandle

	// guarded by inodeReaders.mu
	elem    *list.Element // in inodeReaders.lru; nil once dropped
	refs    int           // READs using h now
	next    int64         // where this handle's last READ ended
	dropped bool          // closed when refs reaches 0
}

// inodeReaders is the mount's set of inode readers.
type inodeReaders struct {
	// constant
	perInode, total int

	mu sync.Mutex
	// guarded by mu
	lru    list.List // of *inodeReader, most recently used first
	byNode map[*fileNode][]*inodeReader
	// INVARIANT: every reader in byNode is in lru and the other way round;
	// lru.Len() <= total except while READs hold the excess.
}

func newInodeReaders(perInode, total int) *inodeReaders {
	return &inodeReaders{perInode: perInode, total: total, byNode: map[*fileNode][]*inodeReader{}}
}

// read serves a READ of n at off without a file handle.
func (r *inodeReaders) read(ctx context.Context, n *fileNode, dest []byte, off int64) (gofuse.ReadResult, syscall.Errno) {
	ir, errno := r.acquire(ctx, n, off)
	if errno != 0 {
		return nil, errno
	}
	res, errno := ir.h.Read(ctx, dest, off)
	end := off + int64(len(dest))
	if errno != 0 || res == nil || res.Size() == 0 {
		// go-fuse calls Done only for a reply with data.
		r.release(ir, end)
		return res, errno
	}
	return held(res, func() { r.release(ir, end) }), 0
}

// heldResult keeps an inode reader until go-fuse has sent the reply: a
// spliced reply reads the data file's descriptor after the handler has
// returned, and a reader closed meanwhile (least recently used, forgotten)
// would leave it a closed or reused descriptor.
type heldResult struct {
	gofuse.ReadResult
	release func()
}

func (r heldResult) Done() {
	r.ReadResult.Done()
	r.release()
}

// seekable is go-fuse's interface of a result it splices from a file.
type seekable interface {
	Seekable() (fd uintptr, off int64, sz int)
}

// heldFdResult is a heldResult go-fuse can still splice.
type heldFdResult struct {
	heldResult
	fd seekable
}

func (r heldFdResult) Seekable() (uintptr, int64, int) { return r.fd.Seekable() }

// heldVecResult is a heldResult go-fuse still writes without a splice
// attempt.
type heldVecResult struct {
	heldResult
	v vectored
}

func (r heldVecResult) Slices() ([][]byte, gofuse.Status) { return r.v.Slices() }

func held(res gofuse.ReadResult, release func()) gofuse.ReadResult {
	h := heldResult{res, release}
	if fd, ok := res.(seekable); ok {
		return heldFdResult{h, fd}
	}
	if v, ok := res.(vectored); ok {
		return heldVecResult{h, v}
	}
	return h
}

// acquire returns a reader of n's current version for a READ at off: the
// one whose last READ ended near off, else a new one (up to perInode), else
// n's least recently used one.
func (r *inodeReaders) acquire(ctx context.Context, n *fileNode, off int64) (*inodeReader, syscall.Errno) {
	want := n.currentInfo()
	r.mu.Lock()
	var best, oldest *inodeReader
	for _, ir := range slices.Clone(r.byNode[n]) { // dropLocked edits the list
		if !sameVersion(ir.h.oh.Info(), want) {
			r.dropLocked(ir)
			continue
		}
		if off >= ir.next-seqTolerance && off <= ir.next+seqTolerance {
			best = ir
		}
		oldest = ir // byNode lists a node's readers oldest use last
	}
	if best == nil && len(r.byNode[n]) >= r.perInode {
		best = oldest
	}
	if best != nil {
		r.useLocked(best)
		r.mu.Unlock()
		return best, 0
	}
	r.mu.Unlock()

	h, errno := n.openInodeRead(ctx)
	if errno != 0 {
		return nil, errno
	}
	ir := &inodeReader{node: n, h: h, refs: 1}
	r.mu.Lock()
	ir.elem = r.lru.PushFront(ir)
	r.byNode[n] = append([]*inodeReader{ir}, r.byNode[n]...)
	for r.lru.Len() > r.total {
		victim := r.lru.Back().Value.(*inodeReader)
		if victim == ir {
			break
		}
		r.dropLocked(victim)
	}
	r.mu.Unlock()
	return ir, 0
}

// useLocked takes a reference and makes ir the most recently used reader,
// of the mount and of its node.
func (r *inodeReaders) useLocked(ir *inodeReader) {
	ir.refs++
	r.lru.MoveToFront(ir.elem)
	readers := r.byNode[ir.node]
	for i, x := range readers {
		if x == ir {
			copy(readers[1:i+1], readers[:i])
			readers[0] = ir
			break
		}
	}
}

// release ends a READ that ended at end.
func (r *inodeReaders) release(ir *inodeReader, end int64) {
	r.mu.Lock()
	ir.refs--
	ir.next = end
	closeNow := ir.dropped && ir.refs == 0
	r.mu.Unlock()
	if closeNow {
		ir.h.closeInodeRead()
	}
}

// dropLocked takes ir out of the set; it is closed now if no READ uses it,
// else by the last one.
func (r *inodeReaders) dropLocked(ir *inodeReader) {
	if ir.dropped {
		return
	}
	ir.dropped = true
	r.lru.Remove(ir.elem)
	ir.elem = nil
	readers := r.byNode[ir.node]
	for i, x := range readers {
		if x == ir {
			readers = append(readers[:i], readers[i+1:]...)
			break
		}
	}
	if len(readers) == 0 {
		delete(r.byNode, ir.node)
	} else {
		r.byNode[ir.node] = readers
	}
	if ir.refs == 0 {
		// Closing unpins a cache object: cheap, and done under mu so that
		// a forgotten node's descriptors are gone when forget returns.
		ir.h.closeInodeRead()
	}
}

// forget closes n's readers (the kernel forgot the inode).
func (r *inodeReaders) forget(n *fileNode) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, ir := range slices.Clone(r.byNode[n]) {
		r.dropLocked(ir)
	}
}

// closeAll closes every reader not in use (unmount).
func (r *inodeReaders) closeAll() {
	r.mu.Lock()
	defer r.mu.Unlock()
	for r.lru.Len() > 0 {
		r.dropLocked(r.lru.Front().Value.(*inodeReader))
	}
}

// open reports how many readers the set holds (tests).
func (r *inodeReaders) open() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.lru.Len()
}

// sameVersion reports whether a handle opened on a still serves b.
func sameVersion(a, b objstore.ObjectInfo) bool {
	return a.Version == b.Version && a.Size == b.Size
}

// openInodeRead pins the node's current version for READs by inode. It
// never chooses passthrough (there is no OPEN reply to carry it).
func (n *fileNode) openInodeRead(ctx context.Context) (*readHandle, syscall.Errno) {
	info := n.currentInfo()
	key, ok := n.key()
	if info.Key == "" || !ok {
		return nil, syscall.ENOENT
	}
	info.Key = key
	octx, cancel := n.fsys.opContext(ctx)
	defer cancel()
	oh, err := n.fsys.cache.OpenObject(octx, info)
	if errors.Is(err, objstore.ErrPreconditionFailed) {
		// Our attributes are stale: refresh them and try once more.
		fresh, serr := n.fsys.cache.Stat(octx, key)
		if serr != nil {
			return nil, n.fsys.errno("read", key, serr)
		}
		n.setInfo(fresh)
		oh, err = n.fsys.cache.OpenObject(octx, fresh)
	}
	if err != nil {
		return nil, n.fsys.errno("read", key, err)
	}
	h := &readHandle{node: n, oh: oh, det: newSeqDetector(MinPrefetch, n.fsys.cfg.ReadAhead, prefetchStep)}
	if local, ok := oh.LocalFile(); ok {
		h.local = local // spliced reads
	}
	n.fsys.counters.inodeReaders.Add(1)
	return h, 0
}

// closeInodeRead unpins the handle of an inode reader.
func (h *readHandle) closeInodeRead() { _ = h.oh.Close() }

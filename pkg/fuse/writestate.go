package fuse

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"k8s.io/klog/v2"

	"github.com/basin-csi/basin/pkg/objstore"
)

// copyChunk is the read size of a copy-down.
const copyChunk = 4 << 20

// writeState is the staged content of a file being written on this node,
// shared by all of the inode's handles while any writer is open. It is
// created by the first writer and finished when the last handle goes.
type writeState struct {
	// constant
	node *fileNode
	ino  uint64              // names the staged file (stagedwrites.go)
	base objstore.ObjectInfo // the object when writing began; Key "" = new file

	// Readable without mu, for getattr and reads during a long upload.
	readFile atomic.Pointer[os.File] // file, set with it
	size     atomic.Int64            // current length of the staged content
	mtime    atomic.Int64            // UnixNano of the last change
	writers  atomic.Int32            // open writable handles

	// content orders reads against changes of what they read: readAt
	// holds it shared; a change of the staged content or its size (a
	// write, a truncate, a staged file put in place, its close) holds it
	// exclusively, with mu. An upload only reads the staged file and
	// holds mu alone, so a read does not wait for it, and a read still
	// sees each WRITE and truncate whole, as when reads took mu.
	// Lock order: mu before content.
	content sync.RWMutex

	// refs counts handles and in-flight operations; guarded by node.mu.
	refs int

	// mu serialises changes, copy-down and uploads of the staged file.
	// Lock order: writeState.mu before fileNode.mu.
	mu sync.Mutex
	// guarded by mu
	file     *os.File             // staged content; nil until the first change
	path     string               // file's name in WritesDir; "" once unlinked
	dirty    bool                 // the staged content differs from the bucket
	discard  bool                 // unlinked: never upload
	uploaded *objstore.ObjectInfo // version the clean staged file holds
	// seq: the staged content was only ever appended to from empty, so
	// it may be streamed (streamupload.go); up is its stream, if started.
	seq bool
	up  *upstream
	// claimToken: created with O_EXCL in async mode and not uploaded yet,
	// its first upload is the claim, carrying this token
	// (exclusiveupload.go); "" otherwise.
	claimToken string
	// ack is the acknowledgement note of a close whose upload is pending
	// (uploadMode: async, stagedack.go), "" if none; ackSize is the size
	// reserved for it with the uploader, ackKey the key it was
	// acknowledged under (a rename or unlink of the file first uploads or
	// discards it, so the key stays right while ack is set).
	ack     string
	ackSize int64
	ackKey  string
	// queued: an upload job of this state is queued or running and holds
	// a reference (asyncupload.go). Written under mu, read without it.
	queued atomic.Bool
}

func newWriteState(n *fileNode, ino uint64, base objstore.ObjectInfo) *writeState {
	w := &writeState{node: n, ino: ino, base: base}
	w.size.Store(base.Size)
	mt := base.ModTime
	if mt.IsZero() {
		mt = time.Now()
	}
	w.mtime.Store(mt.UnixNano())
	return w
}

// newCreatedState is the write state of a file created by O_CREAT: empty,
// and dirty so that closing it uploads an empty object.
func newCreatedState(f *FS, ino uint64) (*writeState, error) {
	file, err := f.writes.create(ino)
	if err != nil {
		return nil, err
	}
	w := newWriteState(nil, ino, objstore.ObjectInfo{ModTime: time.Now()})
	w.file, w.path, w.dirty, w.seq = file, file.Name(), true, true
	w.readFile.Store(file)
	return w, nil
}

// adopt takes over the staged file a dead predecessor left at path: it is
// the whole content written so far, and dirty until uploaded again.
func (w *writeState) adopt(path string) error {
	file, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		return fmt.Errorf("adopt staged file: %w", err)
	}
	fi, err := file.Stat()
	if err != nil {
		_ = file.Close()
		return fmt.Errorf("adopt staged file: %w", err)
	}
	w.file, w.path, w.dirty = file, path, true
	w.readFile.Store(file)
	w.size.Store(fi.Size())
	w.mtime.Store(fi.ModTime().UnixNano())
	return nil
}

func (w *writeState) fsys() *FS { return w.node.fsys }

func (w *writeState) touch() { w.mtime.Store(time.Now().UnixNano()) }

// ensureFile creates the staging file. With copyDown, an existing object is
// first copied into it, so that partial writes keep the rest of the data.
// Caller holds mu.
func (w *writeState) ensureFile(ctx context.Context, copyDown bool) error {
	if w.file != nil {
		return nil
	}
	writes := w.fsys().writes
	if !copyDown || w.base.Key == "" || w.base.Size == 0 {
		file, err := writes.create(w.ino)
		if err != nil {
			return err
		}
		w.content.Lock()
		w.size.Store(0)
		w.file, w.path, w.seq = file, file.Name(), true
		w.readFile.Store(file)
		w.content.Unlock()
		return nil
	}
	// The copy becomes the staged file only once complete (stagedwrites.go).
	file, err := writes.createPart(w.ino)
	if err != nil {
		return err
	}
	var path string
	if err = w.copyDown(ctx, file); err == nil {
		path, err = writes.commit(w.ino, file)
	}
	if err != nil {
		_ = file.Close()
		_ = os.Remove(file.Name())
		return err
	}
	w.content.Lock()
	w.file, w.path = file, path
	w.readFile.Store(file)
	w.content.Unlock()
	return nil
}

// copyDown copies the base object into file through the cache (which keeps
// the blocks it fetched). Each chunk is bounded by the op timeout.
func (w *writeState) copyDown(ctx context.Context, file *os.File) error {
	f := w.fsys()
	octx, cancel := f.opContext(ctx)
	oh, err := f.cache.OpenObject(octx, w.base)
	cancel()
	if err != nil {
		return fmt.Errorf("copy-down %s: %w", w.base.Key, err)
	}
	defer func() { _ = oh.Close() }()
	buf := make([]byte, copyChunk)
	size := oh.Info().Size
	for off := int64(0); off < size; {
		n := int(min(int64(len(buf)), size-off))
		cctx, cancel := f.opContext(ctx)
		got, err := oh.ReadAt(cctx, buf[:n], off)
		cancel()
		if err != nil && (!errors.Is(err, io.EOF) || got != n) {
			return fmt.Errorf("copy-down %s at %d: %w", w.base.Key, off, err)
		}
		if _, err := file.WriteAt(buf[:got], off); err != nil {
			return fmt.Errorf("copy-down %s: %w", w.base.Key, err)
		}
		off += int64(got)
	}
	w.size.Store(size)
	return nil
}

// write applies one WRITE.
func (w *writeState) write(ctx context.Context, data []byte, off int64) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if err := w.settleAckLocked(ctx); err != nil {
		return err
	}
	if err := w.ensureFile(ctx, true); err != nil {
		return err
	}
	size := w.size.Load()
	w.content.Lock()
	var err error
	if off == size && w.up != nil && w.up.src.writeDirect(data, off) { // stagedsource.go
		w.fsys().counters.directBytes.Add(int64(len(data)))
	} else {
		_, err = w.file.WriteAt(data, off)
	}
	end := off + int64(len(data))
	if err == nil && end > size {
		w.size.Store(end)
	}
	w.content.Unlock()
	if err != nil {
		w.stopStreamLocked(fallbackError)
		return fmt.Errorf("write staging file: %w", err)
	}
	w.appendedLocked(off, end, size)
	w.dirty = true
	w.touch()
	return nil
}

// truncate sets the length; truncating to 0 needs no copy-down.
func (w *writeState) truncate(ctx context.Context, size int64) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if err := w.settleAckLocked(ctx); err != nil {
		return err
	}
	if err := w.ensureFile(ctx, size > 0); err != nil {
		return err
	}
	w.stopStreamLocked(fallbackTruncate)
	w.content.Lock()
	err := w.file.Truncate(size)
	if err == nil {
		w.size.Store(size)
	}
	w.content.Unlock()
	if err != nil {
		return fmt.Errorf("truncate staging file: %w", err)
	}
	w.seq = size == 0 // written from empty again
	w.dirty = true
	w.touch()
	return nil
}

// readAt reads the staged content, or the base object before any change.
// It holds content, not mu: a read does not wait for an upload (which
// holds mu) of the content it reads, and sees no change half done. The
// file stays open while a handle can read (finish closes it after the
// last one).
func (w *writeState) readAt(ctx context.Context, p []byte, off int64) (int, error) {
	w.content.RLock()
	defer w.content.RUnlock()
	file := w.readFile.Load()
	size := w.size.Load()
	if off >= size {
		return 0, nil
	}
	p = p[:min(int64(len(p)), size-off)]
	if file != nil {
		n, err := file.ReadAt(p, off)
		if errors.Is(err, io.EOF) {
			err = nil // a hole at the end after a truncate up
			clear(p[n:])
			n = len(p)
		}
		return n, err
	}
	f := w.fsys()
	octx, cancel := f.opContext(ctx)
	defer cancel()
	oh, err := f.cache.OpenObject(octx, w.base)
	if err != nil {
		return 0, err
	}
	defer func() { _ = oh.Close() }()
	n, err := oh.ReadAt(octx, p, off)
	if errors.Is(err, io.EOF) && n > 0 {
		err = nil
	}
	return n, err
}

// upload puts the staged content into the bucket if it changed.
func (w *writeState) upload(ctx context.Context) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.uploadLocked(ctx)
}

func (w *writeState) uploadLocked(ctx context.Context) error {
	if !w.dirty || w.discard {
		return nil
	}
	f := w.fsys()
	key, ok := w.node.key()
	if !ok && w.ack != "" {
		// Acknowledged, not unlinked (that discards it): the kernel
		// forgot the inode, whose name is the one acknowledged
		// (settle.go).
		key, ok = w.ackKey, true
	}
	if !ok {
		w.discardLocked() // unlinked meanwhile
		return nil
	}
	if err := w.ensureFile(ctx, true); err != nil {
		return err
	}
	size := w.size.Load()
	if err := w.file.Truncate(size); err != nil { // materialise a truncate up
		return fmt.Errorf("staging file: %w", err)
	}
	uctx, cancel := f.transferContext(ctx, size)
	defer cancel()
	meta := w.node.uploadMeta(w)
	info, streamed := w.completeStreamLocked(uctx, key, size)
	if !streamed {
		var err error
		info, err = f.putStaged(uctx, key, w.file, size, meta, w.claimToken)
		if err != nil {
			return fmt.Errorf("upload %s: %w", key, err)
		}
		w.claimToken = ""
	} else if len(meta) > 0 {
		// The stream started before the metadata was final: set it now
		// (a copy on the server, no upload).
		done, err := objstore.SetMetadataOf(uctx, f.store, key, meta, info.Version)
		if err != nil {
			return fmt.Errorf("upload %s: metadata: %w", key, err)
		}
		info.Version, info.ModTime = done.Version, done.ModTime
	}
	if meta == nil {
		meta = map[string]string{}
	}
	info.Metadata = meta
	if info.Key == "" {
		info.Key = key
	}
	if info.Size == 0 {
		info.Size = size
	}
	if info.ModTime.IsZero() {
		info.ModTime = time.Now()
	}
	w.dirty = false
	w.uploaded = &info
	w.clearAckLocked()
	if !hasMtime(meta) {
		w.mtime.Store(info.ModTime.UnixNano()) // from now on the bucket's time
	}
	f.counters.uploads.Add(1)
	f.counters.uploadBytes.Add(size)
	f.cache.Wrote(info) // the directory's listing stays, with the object in it
	n := w.node
	n.mu.Lock()
	n.info = info
	n.meta = meta
	n.keepVersion = "" // the page cache holds what was written, not a fetched copy
	n.mu.Unlock()
	klog.V(2).InfoS("uploaded", "volume", f.cfg.VolumeID, "key", key, "size", size, "version", info.Version)
	return nil
}

// pendingUpload reports whether content written here is not uploaded yet
// (the next upload then carries the node's metadata too).
func (w *writeState) pendingUpload() bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.dirty && !w.discard
}

// markUnlinked stops any further upload; the staged file's name goes too.
func (w *writeState) markUnlinked() {
	w.mu.Lock()
	w.discardLocked()
	w.mu.Unlock()
}

func (w *writeState) discardLocked() {
	w.stopStreamLocked(fallbackUnlink)
	w.discard = true
	w.clearAckLocked()
	if w.path != "" {
		w.fsys().writes.retire(w.path)
		w.path = ""
	}
}

// finish runs when the last handle is gone: a last upload attempt for data
// no flush managed to store, then the staged file becomes the cached copy
// of the uploaded version (or is removed).
func (w *writeState) finish() {
	f := w.fsys()
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.dirty && !w.discard {
		if err := w.uploadLocked(context.Background()); err != nil {
			klog.ErrorS(err, "upload at release failed; the data written is lost", "volume", f.cfg.VolumeID)
		}
	}
	w.stopStreamLocked(fallbackError) // an upload that failed above
	if w.file == nil {
		return
	}
	path := w.path
	// A staged file that does not close cleanly may not hold what was
	// uploaded: it is removed instead of becoming the cached copy.
	w.content.Lock()
	closeErr := w.file.Close()
	w.file, w.path = nil, ""
	w.readFile.Store(nil)
	w.content.Unlock()
	if path == "" {
		return // unlinked: its name is gone already
	}
	if closeErr != nil {
		klog.ErrorS(closeErr, "close staging file", "volume", f.cfg.VolumeID, "path", path)
	}
	// Installed only while a node of the tree stands for its key: a
	// state whose inode the kernel forgot (uploadMode async, settle.go)
	// may be answered for by another node by now, renamed or removed.
	if key, ok := w.node.key(); ok && closeErr == nil && !w.dirty && !w.discard && w.uploaded != nil && key == w.uploaded.Key {
		ctx, cancel := f.opContext(context.Background())
		installed := *w.uploaded
		// The upload recorded its metadata; a chmod since then may have
		// replaced it, which this late install must not undo.
		installed.Metadata = nil
		err := f.cache.Install(ctx, installed, path)
		cancel()
		if err == nil {
			return
		}
		klog.V(2).InfoS("install of written file into the cache failed", "volume", f.cfg.VolumeID, "key", w.uploaded.Key, "err", err)
	}
	if err := os.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
		klog.ErrorS(err, "remove staging file", "volume", f.cfg.VolumeID, "path", path)
	}
}

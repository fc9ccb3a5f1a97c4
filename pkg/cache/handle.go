package cache

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"sync/atomic"
	"time"

	bolt "go.etcd.io/bbolt"
	"k8s.io/klog/v2"

	"github.com/basin-csi/basin/internal/regfile"
	"github.com/basin-csi/basin/pkg/objstore"
)

// Handle is a pinned object version.
type Handle struct {
	// constant
	c *Cache
	o *object

	closed atomic.Bool
}

// OpenObject pins one object version for reading: it is not evicted until
// the handle is closed. A version other than the cached one invalidates the
// cached data. An open may start prefetching the object's directory
// (prefetch.go).
func (c *Cache) OpenObject(ctx context.Context, info objstore.ObjectInfo) (*Handle, error) {
	h, err := c.openObject(ctx, info)
	if err == nil {
		c.prefetchOpened(info, h.o.allPresent())
	}
	return h, err
}

// openObject is OpenObject without telling the prefetcher.
func (c *Cache) openObject(ctx context.Context, info objstore.ObjectInfo) (*Handle, error) {
	if info.Key == "" || info.Size < 0 {
		return nil, fmt.Errorf("%w: object %q of size %d", ErrInvalidArgument, info.Key, info.Size)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if err := c.waitEvictedLocked(ctx, info.Key); err != nil {
		return nil, err
	}
	old := c.objs[info.Key]
	if old != nil && sameVersion(old.info, info) {
		if err := c.reopenLocked(old); err != nil {
			return nil, err
		}
		c.pinLocked(old)
		c.touch(old)
		return &Handle{c: c, o: old}, nil
	}
	if o := c.reviveLocked(info); o != nil {
		if old != nil {
			c.detachLocked(old)
		}
		c.objs[info.Key] = o
		c.dirtyObjs[o] = struct{}{}
		c.pinLocked(o)
		c.touch(o)
		return &Handle{c: c, o: o}, nil
	}
	var o *object
	if old != nil {
		c.detachLocked(old)
		o = newObject(c, info, c.opts.CacheBlockSize)
		o.dirty = true // the flush replaces old's record
	} else {
		var err error
		if o, err = c.loadLocked(info); err != nil {
			return nil, err
		}
	}
	c.objs[info.Key] = o
	c.pinLocked(o)
	c.touch(o)
	if o.dirty {
		c.dirtyObjs[o] = struct{}{}
	}
	return &Handle{c: c, o: o}, nil
}

// reviveLocked makes a detached object of exactly this version current
// again (a reader asked for the version the bucket moved away from), so
// that two objects never share a data file. The caller holds c.mu.
func (c *Cache) reviveLocked(info objstore.ObjectInfo) *object {
	if len(c.detached) == 0 {
		return nil
	}
	id := objectID(c.opts.Origin, info.Key, info.Version, info.Size)
	for o := range c.detached {
		if o.id != id {
			continue
		}
		o.mu.Lock()
		if o.keepPath {
			// An install took the path over; this one never unlinks it.
			o.mu.Unlock()
			continue
		}
		delete(c.detached, o)
		o.state = stateCurrent
		o.dirty = true // its record may have been dropped meanwhile
		o.mu.Unlock()
		return o
	}
	return nil
}

func sameVersion(a, b objstore.ObjectInfo) bool {
	return a.Version == b.Version && a.Size == b.Size
}

// waitEvictedLocked waits (releasing mu meanwhile) until key is not being
// evicted. The caller holds c.mu, and holds it again on return.
func (c *Cache) waitEvictedLocked(ctx context.Context, key string) error {
	for {
		if c.closed {
			return ErrClosed
		}
		ch, ok := c.evicting[key]
		if !ok {
			return nil
		}
		c.mu.Unlock()
		select {
		case <-ch:
		case <-ctx.Done():
			c.mu.Lock()
			return ctx.Err()
		}
		c.mu.Lock()
	}
}

// loadLocked returns the object for info, filled from its index record
// when the index holds this version; a record of another version is
// dropped (its data file deleted). The caller holds c.mu.
func (c *Cache) loadLocked(info objstore.ObjectInfo) (*object, error) {
	var (
		rec   objRecord
		found bool
		atime uint64
	)
	err := c.ix.view(func(tx *bolt.Tx) error {
		raw := tx.Bucket(bucketObjects).Get([]byte(info.Key))
		if raw == nil {
			return nil
		}
		found = true
		if at := tx.Bucket(bucketATime).Get([]byte(info.Key)); at != nil {
			atime, _ = getU64(at)
		}
		r, err := decodeObject(raw)
		if err != nil {
			klog.ErrorS(err, "Dropping corrupt object record", "volume", c.opts.VolumeID, "key", info.Key)
			return nil
		}
		rec = r
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("cache: read index: %w", err)
	}
	if !found {
		return newObject(c, info, c.opts.CacheBlockSize), nil
	}
	if rec.BlockSize == 0 || rec.Version != info.Version || rec.Size != info.Size {
		// Another version (or garbage): forget it and its data.
		o := newObject(c, info, c.opts.CacheBlockSize)
		o.dirty = true
		if rec.BlockSize != 0 {
			c.unlinkDataLocked(info.Key, objectID(c.opts.Origin, info.Key, rec.Version, rec.Size))
		}
		return o, nil
	}
	o := newObject(c, info, rec.BlockSize)
	o.inIndex = true
	o.alloc = rec.Alloc
	// The indexed access time, so that the flusher's grain applies to
	// objects that left memory and came back.
	o.flushedATime.Store(int64(atime))
	o.atime.Store(int64(atime))
	f, err := regfile.Open(o.path, os.O_RDWR, 0)
	if err != nil {
		// The data file is gone: nothing is present. If someone else
		// deleted it, used still counts it.
		if c.unlinked[info.Key] != o.id {
			c.used.Add(-rec.Alloc)
		}
		delete(c.unlinked, info.Key)
		o.alloc = 0
		o.dirty = true
		return o, nil
	}
	o.file.Store(f)
	size, _, err := fileAlloc(f)
	if err != nil {
		size = 0
	}
	for b := 0; b < o.nblocks; b++ {
		if rec.Present[b/64]&(1<<(b%64)) == 0 {
			continue
		}
		if int64(b)*o.bs+o.blockLen(b) > size {
			o.dirty = true // short file: the block is not there
			continue
		}
		o.present.set(b)
		o.crcs[b] = rec.CRCs[b]
	}
	if c.takeVerifiedLocked(o.id) && o.allPresent() {
		// Verified before it was trimmed: its file is the one this
		// process checked (only this process writes it).
		for b := range o.nblocks {
			o.ready.set(b)
		}
	}
	return o, nil
}

// pinLocked pins o; the caller holds c.mu.
func (c *Cache) pinLocked(o *object) {
	o.mu.Lock()
	o.pins++
	o.mu.Unlock()
	c.leaveIdleLocked(o)
}

// unpin drops one pin; an unpinned current object becomes idle, an
// unpinned detached one loses its data file.
func (c *Cache) unpin(o *object) {
	c.mu.Lock()
	o.mu.Lock()
	o.pins--
	pins, state := o.pins, o.state
	o.mu.Unlock()
	defer c.mu.Unlock()
	if pins == 0 {
		// Every block write holds a pin: none runs now.
		o.dropKept(c.pool(o.bs))
		o.closeDirect()
		switch {
		case state == stateCurrent && c.objs[o.info.Key] == o && !c.closed:
			c.idleLocked(o)
		case state == stateDetached:
			delete(c.detached, o)
			c.removeFilesLocked(o)
		}
	}
}

// detachLocked takes o out of objs because another version replaces it;
// its data file goes now if it is unpinned, else with the last pin. The
// caller holds c.mu.
func (c *Cache) detachLocked(o *object) {
	delete(c.objs, o.info.Key)
	delete(c.dirtyObjs, o)
	c.leaveIdleLocked(o)
	o.mu.Lock()
	o.state = stateDetached
	pins := o.pins
	o.mu.Unlock()
	if pins == 0 {
		c.removeFilesLocked(o)
		return
	}
	c.detached[o] = struct{}{}
}

// removeFilesLocked deletes detached objects' data files and their
// accounting. The objects must be unpinned and out of objs. The caller
// holds c.mu, so no install can put a new file at the same path meanwhile.
func (c *Cache) removeFilesLocked(objs ...*object) {
	for _, o := range objs {
		o.mu.Lock()
		if o.state == stateRemoved {
			o.mu.Unlock()
			continue
		}
		o.state = stateRemoved
		alloc, keep, indexed := o.alloc, o.keepPath, o.inIndex
		o.alloc = 0
		o.mu.Unlock()
		o.closeFile()
		if !keep && indexed {
			c.unlinked[o.info.Key] = o.id
		}
		if !keep {
			if err := os.Remove(o.path); err != nil && !errors.Is(err, os.ErrNotExist) {
				klog.ErrorS(err, "Removing data file", "volume", c.opts.VolumeID)
			}
		}
		c.used.Add(-alloc)
	}
}

// unlinkDataLocked deletes the data file of key's indexed version id
// unless a detached object still uses it (its removal will). The caller
// holds c.mu.
func (c *Cache) unlinkDataLocked(key string, id objID) {
	for o := range c.detached {
		if o.id == id {
			return
		}
	}
	c.unlinkData(c.dataPath(id))
	c.unlinked[key] = id
}

// unlinkData deletes a data file no object in memory refers to and
// subtracts its allocation.
func (c *Cache) unlinkData(path string) {
	fi, err := os.Lstat(path)
	if err != nil {
		return
	}
	if err := os.Remove(path); err != nil {
		klog.ErrorS(err, "Removing data file", "volume", c.opts.VolumeID)
		return
	}
	c.used.Add(-allocated(fi))
}

// Info is the pinned version's attributes.
func (h *Handle) Info() objstore.ObjectInfo { return h.o.info }

// ReadAt reads like io.ReaderAt: present blocks from the data file, missing
// ones fetched (single-flight per block). A read that ends exactly at the
// end of the object returns a nil error; only a short read returns io.EOF.
// If the object changed in the bucket it returns an error wrapping
// objstore.ErrPreconditionFailed.
func (h *Handle) ReadAt(ctx context.Context, p []byte, off int64) (int, error) {
	o := h.o
	if h.closed.Load() || h.c.isClosed.Load() {
		return 0, ErrClosed
	}
	if off < 0 {
		return 0, fmt.Errorf("%w: negative offset", ErrInvalidArgument)
	}
	if off >= o.info.Size {
		if len(p) == 0 {
			return 0, nil
		}
		return 0, io.EOF
	}
	var eof error
	if rem := o.info.Size - off; int64(len(p)) > rem {
		p = p[:rem]
		eof = io.EOF
	}
	if len(p) == 0 {
		return 0, nil
	}
	b0, b1 := int(off/o.bs), int((off+int64(len(p))-1)/o.bs)
	if o.ready.hasRange(b0, b1) {
		if f := o.file.Load(); f != nil {
			var (
				n   int
				err error
			)
			if o.keptBits.hasAny(b0, b1) {
				n, err = h.c.readReady(o, p, off)
			} else {
				n, err = f.ReadAt(p, off)
			}
			if n == len(p) {
				h.c.stats.hits.Add(1)
				h.c.stats.hitBytes.Add(int64(n))
				h.c.touch(o)
				return n, eof
			}
			// The data file lost bytes behind our back: refetch.
			klog.V(2).InfoS("Short read of a data file", "volume", h.c.opts.VolumeID, "err", err)
			o.mu.Lock()
			for b := b0; b <= b1; b++ {
				o.dropBlockLocked(b)
			}
			o.mu.Unlock()
		}
	}
	n, err := h.c.readSlow(ctx, o, p, off)
	if err != nil {
		return n, err
	}
	return n, eof
}

// Prefetch starts background fetches of [off, off+length) and returns at
// once; fetches outlive the call but not the cache. It does nothing while
// the cache has no room for blocks (a block was refused room within
// noRoomPause): a block fetched ahead that cannot be stored is gone when
// its reader arrives, which then fetches it again (a sequential read of a
// 1 GiB file with the cache disk at its free-space floor downloaded 8
// times its size).
func (h *Handle) Prefetch(off, length int64) {
	o := h.o
	if h.closed.Load() || off < 0 || length <= 0 || off >= o.info.Size {
		return
	}
	if at := h.c.noRoomAt.Load(); at != 0 && h.c.nowNano()-at < int64(noRoomPause) {
		return
	}
	end := min(off+length, o.info.Size, off+maxPrefetch)
	h.c.acquire(o, int(off/o.bs), int((end-1)/o.bs), forAhead)
}

// PrefetchWindow is how far ahead of a sequential reader prefetching
// pays now: twice what the GETs the fetch tuner allows hold in flight, so
// that parts received and waiting for the reader do not take the window
// from the next GETs, and fetches queue for slots whenever the reader is
// faster than the GETs (which is what lets the tuner raise the limit).
func (h *Handle) PrefetchWindow() int64 {
	return 2 * int64(h.c.fetches.current()) * h.c.opts.PartSize
}

// maxPrefetch caps one Prefetch call.
const maxPrefetch = 1 << 30

// noRoomPause is how long read-ahead pauses after a block was refused
// room in the cache.
const noRoomPause = time.Second

// LocalPath returns the data file's path when the whole object is present
// and verified, so the FUSE layer can open it for passthrough. Small
// objects whose blocks are present but not verified yet are verified
// first; large ones are verified in the background and qualify later.
func (h *Handle) LocalPath() (string, bool) {
	o := h.o
	if h.closed.Load() || h.c.isClosed.Load() || o.nblocks == 0 {
		return "", false
	}
	if !o.allReady() {
		o.settle(h.c.ctx) // blocks read but still being written
	}
	if !o.allReady() {
		if !o.allPresent() {
			return "", false
		}
		flights := h.c.acquire(o, 0, o.nblocks-1, forRead)
		if !o.small {
			return "", false
		}
		for _, f := range flights {
			if f == nil {
				continue
			}
			select {
			case <-f.done:
			case <-h.c.ctx.Done():
				return "", false
			}
		}
		if !o.allReady() {
			return "", false
		}
	}
	o.mu.Lock()
	state := o.state
	o.mu.Unlock()
	if state == stateRemoved {
		return "", false
	}
	h.c.stats.passthrough.Add(1)
	h.c.touch(o)
	return o.path, true
}

// LocalFile is LocalPath's data file itself, open for as long as the
// handle is: the caller may read it or hand it to the kernel as a FUSE
// passthrough backing file, and must not close it. It saves the caller an
// open(2) and a close(2) per open of a cached file.
func (h *Handle) LocalFile() (*os.File, bool) {
	if _, ok := h.LocalPath(); !ok {
		return nil, false
	}
	f := h.o.file.Load()
	return f, f != nil
}

// Close unpins the object, once the blocks that arrived are written, so
// that what was read through the handle is cached when Close returns.
func (h *Handle) Close() error {
	if h.closed.Swap(true) {
		return nil
	}
	h.o.settle(h.c.ctx)
	h.c.unpin(h.o)
	return nil
}

package cache

import (
	"encoding/binary"
	"errors"
	"fmt"
	"os"

	"golang.org/x/sys/unix"
	"k8s.io/klog/v2"

	"github.com/basin-csi/basin/internal/regfile"
)

// The idle tier. An unpinned object stays in Cache.objs, with its blocks'
// presence, CRCs and ready bits, so that opening it again costs no index
// read and no verification:
//
//   - Cache.idle holds every idle object, most recent first, at most
//     tuning.maxIdle of them (about idleObjectBytes each); beyond that the
//     oldest ones whose state is persisted leave memory (trimIdleLocked)
//     and the next open loads them from the index.
//   - Cache.idleFiles holds the idle objects that still have their data
//     file open, at most tuning.maxIdleFiles of them once the flusher has
//     synced what was written (an object with unsynced data keeps its
//     descriptor until then); beyond that the oldest ones close it
//     (closeIdleFilesLocked) and the next open opens it again
//     (reopenLocked): one open(2) instead of an index read, an open and
//     an fstat. Keeping every idle object's descriptor ran the
//     mount out of descriptors (EMFILE) in a warm pass over 20,000 files.
//
// The records stay honest because an object in memory is its key's
// authority: eviction, installs, a version change and Close all find it
// in Cache.objs and change or drop it there (evict.go pickVictims,
// install.go, detachLocked), whether or not its file is open. Recovery
// runs only before any object is in memory.
//
// INVARIANT: an object in objs with a present block has its data file
// open (object.file) unless it is idle, unpinned and on neither
// idleFiles nor a write path; then its data file is at object.path and
// reopenLocked opens it before the object is pinned again.
// INVARIANT: idleFiles ⊆ idle; an object with a descriptor closed by the
// tier has no unsynced data (the flusher syncs through object.file).

// idleObjectBytes is the heap an idle object of one block takes with its
// map entry, list element, key, version and path (measured: 678 bytes for
// 20,000 keys of 35 bytes); idleMemory is what the idle tier may take.
const (
	idleObjectBytes = 700
	idleMemory      = 32 << 20
)

// defaultMaxIdleFiles bounds the descriptors idle objects hold; open
// lowers it to a quarter of RLIMIT_NOFILE.
const defaultMaxIdleFiles = 4096

// maxIdleFilesFor is the descriptor bound for a process whose soft
// RLIMIT_NOFILE is nofile (0: unknown).
func maxIdleFilesFor(want int, nofile uint64) int {
	if nofile > 0 && uint64(want) > nofile/4 {
		return int(nofile / 4)
	}
	return want
}

// noFileLimit is the process's soft RLIMIT_NOFILE, 0 if unknown.
func noFileLimit() uint64 {
	var rl unix.Rlimit
	if err := unix.Getrlimit(unix.RLIMIT_NOFILE, &rl); err != nil {
		return 0
	}
	return rl.Cur
}

// idleLocked puts the unpinned current object o at the front of the idle
// tier and brings the tier back within its bounds, kicking the flusher
// when the oldest objects wait for a flush. The caller holds c.mu.
func (c *Cache) idleLocked(o *object) {
	o.idle = c.idle.PushFront(o)
	if o.file.Load() != nil {
		o.idleFile = c.idleFiles.PushFront(o)
	}
	g := int64(c.tune.atimeGrain)
	ok := c.idle.Len() <= c.tune.maxIdle || c.trimIdleLocked(g, unpinTrimScan)
	if c.idleFiles.Len() > c.tune.maxIdleFiles && !c.closeIdleFilesLocked(unpinTrimScan) {
		ok = false
	}
	if !ok {
		kick(c.flushKick)
	}
}

// leaveIdleLocked takes o off the idle tier's lists; the caller holds
// c.mu.
func (c *Cache) leaveIdleLocked(o *object) {
	if o.idle != nil {
		c.idle.Remove(o.idle)
		o.idle = nil
	}
	if o.idleFile != nil {
		c.idleFiles.Remove(o.idleFile)
		o.idleFile = nil
	}
}

// closeIdleFilesLocked closes the data files of up to scan of the oldest
// idle objects beyond tuning.maxIdleFiles; true means idleFiles is within
// the bound. An object with data not yet synced keeps its file until the
// flusher has synced it; one with nothing present leaves memory instead
// (its file is no record's), once its state is persisted. The caller
// holds c.mu.
func (c *Cache) closeIdleFilesLocked(scan int) bool {
	for e := c.idleFiles.Back(); e != nil && scan > 0 && c.idleFiles.Len() > c.tune.maxIdleFiles; scan-- {
		prev := e.Prev()
		o := e.Value.(*object)
		o.mu.Lock()
		closable := o.pins == 0 && !o.unsynced && o.writes == 0
		present, persisted := o.anyPresent(), !o.dirty && !o.atimeDueLocked(int64(c.tune.atimeGrain))
		o.mu.Unlock()
		switch {
		case closable && present:
			c.idleFiles.Remove(e)
			o.idleFile = nil
			if f := o.file.Swap(nil); f != nil {
				_ = f.Close()
			}
		case closable && persisted:
			c.leaveIdleLocked(o)
			delete(c.objs, o.info.Key)
			c.removeFilesLocked(o)
		}
		e = prev
	}
	return c.idleFiles.Len() <= c.tune.maxIdleFiles
}

// reopenLocked opens the data file of an idle object whose descriptor the
// tier closed. A data file that is gone (removed behind the cache's back)
// leaves o with nothing present, as loadLocked does. The caller holds
// c.mu; o is not pinned yet.
func (c *Cache) reopenLocked(o *object) error {
	if o.file.Load() != nil || !o.anyPresent() {
		return nil
	}
	f, err := regfile.Open(o.path, os.O_RDWR, 0)
	if err == nil {
		o.file.Store(f)
		return nil
	}
	if !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("cache: reopen data file: %w", err)
	}
	klog.V(2).InfoS("Data file of an idle object is gone", "volume", c.opts.VolumeID, "key", o.info.Key)
	o.mu.Lock()
	for b := range o.nblocks {
		if o.present.has(b) {
			o.dropBlockLocked(b)
		}
	}
	alloc := o.alloc
	o.alloc = 0
	o.mu.Unlock()
	c.used.Add(-alloc)
	c.dirtyObjs[o] = struct{}{}
	return nil
}

// trimIdle closes the oldest idle objects beyond tuning.maxIdle whose
// state is persisted, access times to within grain g (ns).
func (c *Cache) trimIdle(g int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.trimIdleLocked(g, c.idle.Len())
	c.closeIdleFilesLocked(c.idleFiles.Len())
}

// unpinTrimScan is how many of the oldest idle objects an unpin looks at
// to bring the idle tier back within its bounds without the flusher: a
// warm pass over more objects than that keeps their state persisted, so
// the flusher (a scan of every object) need not run after every open.
const unpinTrimScan = 4

// trimIdleLocked is trimIdle looking at no more than scan of the oldest
// idle objects; true means the idle list is within tuning.maxIdle. The
// caller holds c.mu.
func (c *Cache) trimIdleLocked(g int64, scan int) bool {
	for e := c.idle.Back(); e != nil && scan > 0 && c.idle.Len() > c.tune.maxIdle; scan-- {
		prev := e.Prev()
		o := e.Value.(*object)
		o.mu.Lock()
		done := o.pins == 0 && !o.dirty && !o.atimeDueLocked(g)
		o.mu.Unlock()
		if done {
			c.leaveIdleLocked(o)
			delete(c.objs, o.info.Key)
			if o.anyPresent() {
				if o.allReady() {
					c.rememberVerifiedLocked(o.id)
				}
				o.closeFile()
			} else {
				c.removeFilesLocked(o) // a data file no record names
			}
		}
		e = prev
	}
	return c.idle.Len() <= c.tune.maxIdle
}

// verifiedKey is an object's key in Cache.verified: 64 bits of its id
// (a SHA-256), which two objects of one cache share with a chance of
// about n²/2⁶⁵.
func verifiedKey(id objID) uint64 { return binary.LittleEndian.Uint64(id[:8]) }

// rememberVerifiedLocked records that every block of the object id was
// verified (or written) by this process; the caller holds c.mu.
func (c *Cache) rememberVerifiedLocked(id objID) {
	if len(c.verified) >= c.tune.maxVerified {
		clear(c.verified)
	}
	c.verified[verifiedKey(id)] = struct{}{}
}

// takeVerifiedLocked reports whether id was remembered as verified and
// forgets it; the caller holds c.mu.
func (c *Cache) takeVerifiedLocked(id objID) bool {
	k := verifiedKey(id)
	if _, ok := c.verified[k]; !ok {
		return false
	}
	delete(c.verified, k)
	return true
}

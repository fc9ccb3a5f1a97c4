package cache

import (
	"container/list"
	"os"
	"sync"
	"sync/atomic"

	"github.com/basin-csi/basin/internal/regfile"
	"github.com/basin-csi/basin/pkg/objstore"
)

// bitset is a fixed-size set of block numbers with lock-free reads.
type bitset []atomic.Uint64

func newBitset(n int) bitset { return make(bitset, (n+63)/64) }

func (b bitset) has(i int) bool { return b[i/64].Load()&(1<<(i%64)) != 0 }
func (b bitset) set(i int)      { b[i/64].Or(1 << (i % 64)) }
func (b bitset) clear(i int)    { b[i/64].And(^uint64(1 << (i % 64))) }

// hasRange reports whether every block in [lo, hi] is in the set.
func (b bitset) hasRange(lo, hi int) bool {
	for i := lo; i <= hi; i++ {
		if b[i/64].Load()&(1<<(i%64)) == 0 {
			return false
		}
	}
	return true
}

// hasAny reports whether some block in [lo, hi] is in the set.
func (b bitset) hasAny(lo, hi int) bool {
	for i := lo; i <= hi; i++ {
		if b[i/64].Load()&(1<<(i%64)) != 0 {
			return true
		}
	}
	return false
}

// words returns a plain copy.
func (b bitset) words() []uint64 {
	w := make([]uint64, len(b))
	for i := range b {
		w[i] = b[i].Load()
	}
	return w
}

// objState says whether an in-memory object is the one its key's index
// record describes.
type objState int

const (
	// stateCurrent: the object is c.objs[key]; the flusher persists it.
	stateCurrent objState = iota
	// stateDetached: another version replaced it (or the bucket's version
	// moved); its data file is deleted when the last pin goes.
	stateDetached
	// stateRemoved: its data file is gone (evicted or detached and unpinned).
	stateRemoved
)

// object is the in-memory state of one cached object version, shared by
// its handles and fetches. Objects live in Cache.objs while pinned and, up
// to tuning.maxIdle, while idle (idle.go).
type object struct {
	// constant
	c       *Cache
	info    objstore.ObjectInfo
	bs      int64
	nblocks int
	id      objID
	path    string
	small   bool

	// ready: present and checked against its CRC by this process (or
	// written by it). ReadAt serves these blocks with a bare pread.
	// INVARIANT: ready ⊆ present.
	ready bitset
	// present: recorded as present (in the index or by a write of this
	// process) but maybe not verified yet.
	present bitset
	// keptBits: blocks whose buffer is kept in kept (a lock-free hint).
	keptBits bitset
	// file is the data file once it exists; set before any ready bit.
	file atomic.Pointer[os.File]
	// direct is a second descriptor of file opened with O_DIRECT for
	// block writes (writeback.go), from the first block write until the
	// last pin goes (so idle objects hold one descriptor, not two).
	direct atomic.Pointer[os.File]
	// atime is the last access in unix ns.
	atime atomic.Int64
	// flushedATime is the access time last written to the index (stored
	// under mu; read by touch without it).
	flushedATime atomic.Int64
	// atimeQueued: o is on Cache.dueATimes (touch).
	atimeQueued atomic.Bool
	// prefetching: a prefetch fetches it; its GETs take the prefetch
	// slots (prefetch.go).
	prefetching atomic.Bool
	// tierOffered: a small object offered whole to the shared cache tier
	// (tierfetch.go), so that its blocks stored at once offer it once.
	tierOffered atomic.Bool

	mu sync.Mutex
	// guarded by mu
	crcs     []uint32
	inflight map[int]*flight
	// kept: ready blocks written with O_DIRECT whose fetch buffer is kept
	// for the reader to come (writeback_kept.go).
	kept map[int]*flight
	// uncached is the last block fetched that could not be stored (no
	// room), with its bytes on its completed flight (a heap copy), until
	// a read reaches the block's end, another block takes its place or
	// the last pin goes: a reader reading a block in several requests
	// finds the rest there instead of fetching the block again.
	uncached      *flight
	uncachedBlock int
	// pins counts handles and running fetches; pinned objects are never
	// evicted and keep their data file.
	pins  int
	state objState
	// dirty: the record in the index differs from this state.
	dirty bool
	// unsynced: data written since the last fdatasync/syncfs.
	unsynced bool
	// alloc is the data file's allocated bytes as counted in Cache.used.
	alloc int64
	// writes counts block writes between their admission and their
	// settlement (settleWriteLocked); carried is the reservations of the
	// settled ones the last of them turns into allocation.
	// INVARIANT: o's share of Cache.used is alloc + carried + the
	// reservations of the writes still running.
	writes  int
	carried int64
	// inIndex: the index holds a record of this version.
	inIndex bool
	// keepPath: a newer install of the same version took over path, so
	// removing this object must not unlink it.
	keepPath bool
	// noDirect: the data file refused O_DIRECT; blocks are written
	// through file.
	noDirect bool

	// guarded by Cache.mu
	idle     *list.Element // position in Cache.idle while unpinned
	idleFile *list.Element // position in Cache.idleFiles while unpinned with file open
}

// flight is one block being fetched or verified. It stays in the
// object's inflight map until the block is ready (written or verified) or
// failed; readers of the block wait on avail or done.
type flight struct {
	// done is closed when the block is ready, failed (err) or could not be
	// cached (buf then stays set).
	done chan struct{}
	// avail is closed when buf holds the fetched block, which may be
	// before it is written; never for a block verified good.
	avail chan struct{}
	// err is set before done is closed.
	err error

	mu sync.RWMutex
	// guarded by mu
	// buf is the block's bytes from publish until the block is written
	// and, if it was written with O_DIRECT and kept, until it is read or
	// dropped; then nil (bp back in the pool). When the block could not be
	// cached (disk full) buf is a copy that stays (bp nil).
	buf []byte
	bp  *[]byte

	// early is, on a random reader's fetch of part of a block
	// (fetchEarly), the block-relative range that reader asked for, which
	// arrives first; earlyCh (nil otherwise) is closed once its bytes are
	// in ebuf, before the rest of the block. Both constant.
	early   span
	earlyCh chan struct{}
	// ebuf (guarded by mu) is the block's buffer while only early is in
	// it: from earlyCh until publish, or nil again on a failed fetch.
	ebuf []byte

	// consumed: a read reached the end of the block, so its buffer need
	// not be kept once the block is written.
	consumed atomic.Bool
	// why: whom the fetch is for (constant); only read-ahead is kept.
	why fetchFor
	// elem is the flight's entry in its pool's kept list; guarded by
	// bufPool.mu.
	elem *list.Element
}

func newFlight(why fetchFor) *flight {
	return &flight{done: make(chan struct{}), avail: make(chan struct{}), why: why}
}

// span is a byte range [lo, hi) within a block.
type span struct{ lo, hi int64 }

// has reports whether [lo, hi) lies within s, which is not empty.
func (s span) has(lo, hi int64) bool { return s.hi > s.lo && lo >= s.lo && hi <= s.hi }

func newObject(c *Cache, info objstore.ObjectInfo, bs int64) *object {
	n := numBlocks(info.Size, bs)
	id := objectID(c.opts.Origin, info.Key, info.Version, info.Size)
	return &object{
		c:        c,
		info:     info,
		bs:       bs,
		nblocks:  n,
		id:       id,
		path:     c.dataPath(id),
		small:    info.Size <= c.opts.SmallObjectSize,
		ready:    newBitset(n),
		present:  newBitset(n),
		keptBits: newBitset(n),
		crcs:     make([]uint32, n),
		inflight: make(map[int]*flight),
	}
}

// addPin adds a pin to o, which must be pinned already (so it is not on
// the idle list).
func (o *object) addPin() {
	o.mu.Lock()
	o.pins++
	o.mu.Unlock()
}

// blockLen is the length of block b.
func (o *object) blockLen(b int) int64 {
	return min(o.bs, o.info.Size-int64(b)*o.bs)
}

// allReady reports whether every block is ready.
func (o *object) allReady() bool {
	return o.nblocks == 0 || o.ready.hasRange(0, o.nblocks-1)
}

// allPresent reports whether every block is at least recorded present.
func (o *object) allPresent() bool {
	return o.nblocks == 0 || o.present.hasRange(0, o.nblocks-1)
}

// record returns the persistent form; the caller holds o.mu.
func (o *object) recordLocked() *objRecord {
	return &objRecord{
		Version:   o.info.Version,
		Size:      o.info.Size,
		ModTime:   o.info.ModTime,
		BlockSize: o.bs,
		Alloc:     o.alloc,
		Present:   o.present.words(),
		CRCs:      append([]uint32(nil), o.crcs...),
	}
}

// anyPresent reports whether some block is present.
func (o *object) anyPresent() bool {
	for i := range o.present {
		if o.present[i].Load() != 0 {
			return true
		}
	}
	return false
}

// dropBlockLocked forgets block b (bad CRC, short file); the caller holds
// o.mu.
func (o *object) dropBlockLocked(b int) {
	o.ready.clear(b)
	o.present.clear(b)
	o.crcs[b] = 0
	o.dirty = true
}

// openFile opens the data file, creating it if create is set; the caller
// holds o.mu.
func (o *object) openFileLocked(create bool) (*os.File, error) {
	if f := o.file.Load(); f != nil {
		return f, nil
	}
	var (
		f   *os.File
		err error
	)
	if create {
		f, err = createDataFile(o.path)
	} else {
		f, err = regfile.Open(o.path, os.O_RDWR, 0)
	}
	if err != nil {
		return nil, err
	}
	o.file.Store(f)
	return f, nil
}

// takePath marks o as having lost its data file's path to a new install
// of the same id; it reports whether the ids matched.
func (o *object) takePath(id objID) bool {
	if o.id != id {
		return false
	}
	o.mu.Lock()
	o.keepPath = true
	o.mu.Unlock()
	return true
}

// closeFile closes the data file; the object must be unreachable by
// readers (unpinned and out of Cache.objs, or the cache closing).
func (o *object) closeFile() {
	if f := o.file.Swap(nil); f != nil {
		_ = f.Close()
	}
	o.closeDirect()
}

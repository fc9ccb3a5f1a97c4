package cache

import (
	"container/list"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	bolt "go.etcd.io/bbolt"
	"golang.org/x/sys/unix"
	"k8s.io/klog/v2"

	"github.com/basin-csi/basin/internal/cacheusage"
	"github.com/basin-csi/basin/pkg/objstore"
)

// Cache is one volume's cache directory. Safe for concurrent use.
//
// Lock order: flushMu → mu → object.mu → metaMu. Nothing that holds an
// object's mu takes Cache.mu. inodes.mu and usageMu are taken alone.
type Cache struct {
	// constant
	dir, stagingDir string
	opts            Options
	tune            tuning
	store           objstore.Store // nil for a cache opened by the node view
	ix              *index
	lock            *os.File // flock'ed LOCK file, held while open
	dataDir         *os.File // for syncfs
	fetches         *fetchSlots
	verifySem       chan struct{}   // bounds running verification jobs
	ctx             context.Context // cancelled by Close; bounds fetches
	cancel          context.CancelFunc
	stop            chan struct{} // closed by Close; stops the loops
	flushKick       chan struct{}
	evictKick       chan struct{}
	inodeKick       chan struct{}
	idleJobs        chan func() // to a job goroutine waiting for work (goJob)
	pools           sync.Map    // block size → *bufPool
	statSF          group[string, objstore.ObjectInfo]
	listSF          group[string, Listing]
	primeSF         group[string, Listing]
	prefetch        *prefetcher // nil: directory prefetch is off
	disk            diskFree

	// used is the bytes the data files allocate (st_blocks), plus
	// reservations of blocks being written.
	// INVARIANT: after a flush on a quiescent cache, used == sum of the
	// allocations of all data files == meta "used" + detached files.
	used        atomic.Int64
	objectCount atomic.Int64
	isClosed    atomic.Bool // mirrors closed for lock-free checks
	lastAccess  atomic.Int64
	// noRoomAt is when a block was last refused room (nowNano; 0: never):
	// read-ahead pauses for noRoomPause after it (Handle.Prefetch).
	noRoomAt atomic.Int64
	stats    counters

	inodes inodeTable

	// jobs counts fetch goroutines and the background loops.
	jobs sync.WaitGroup

	// flushMu serialises flush, eviction and recovery: the three writers
	// of object records.
	flushMu sync.Mutex

	// dueMu guards dueATimes: the objects whose access time became due
	// for the index at the periodic flush's grain (touch), so that the
	// flush need not look at every object in memory. Taken after c.mu.
	dueMu     sync.Mutex
	dueATimes []*object

	mu sync.Mutex
	// guarded by mu
	objs      map[string]*object // current version of each key in memory
	idle      *list.List         // unpinned objects in objs, most recent first (idle.go)
	idleFiles *list.List         // those of idle with their data file open, most recent first
	dirtyObjs map[*object]struct{}
	staleKeys map[string]struct{}  // records to delete at the next flush
	detached  map[*object]struct{} // detached objects still pinned
	// unlinked: data files this process deleted (and subtracted from
	// used) while the index may still name them, until a flush rewrites
	// the key's record.
	unlinked map[string]objID
	evicting map[string]chan struct{} // keys being evicted; closed when done
	// verified: objects trimmed from memory (trimIdleLocked) with every
	// block verified by this process, by verifiedKey. A reload takes its
	// entry and marks the blocks ready without reading them again, so
	// CRC checks stay once per block per process. At most
	// tuning.maxVerified entries.
	verified map[uint64]struct{}
	closed   bool

	usageMu sync.Mutex
	// guarded by usageMu
	lastUsage cacheusage.Usage // last written usage file
	// uploads reports the file system's uploads for the usage file
	// (ReportUploads); nil: none.
	uploads atomic.Pointer[func() cacheusage.Uploads]

	ownMu   sync.Mutex
	ownDirs map[string]time.Time // guarded by ownMu: directories MadeDir created ("a/b/"), and when

	primeMu sync.Mutex
	primed  map[string]time.Time // guarded by primeMu: directories Prime listed, and when

	metaMu sync.Mutex
	// guarded by metaMu
	attrs    map[string]pendingAttr // Stat results not yet in the index
	lists    map[string]pendingList // listings not yet in the index
	metaGen  uint64
	fetching map[string][]*metaFetch // metadata fetches under way, by the name they answer for (metafetch.go)
}

// counters are Stats' monotonic counters.
type counters struct {
	hits, misses, hitBytes, missBytes  atomic.Int64
	bucketRequests, bucketBytes, evict atomic.Int64
	passthrough                        atomic.Int64
	// verifyBufs counts block buffers held by verification jobs.
	verifyBufs gauge
}

// gauge is a current count and the highest it has been.
type gauge struct{ cur, peak atomic.Int64 }

func (g *gauge) enter() {
	n := g.cur.Add(1)
	for p := g.peak.Load(); n > p && !g.peak.CompareAndSwap(p, n); p = g.peak.Load() {
	}
}

func (g *gauge) leave() { g.cur.Add(-1) }

// Open opens (creating if needed, mode 0700) the cache in dir for the
// objects of store, recovering from any crash first.
func Open(ctx context.Context, dir string, store objstore.Store, opts Options) (*Cache, error) {
	if store == nil {
		return nil, fmt.Errorf("%w: nil store", ErrInvalidArgument)
	}
	return open(ctx, dir, store, opts, defaultTuning())
}

func open(ctx context.Context, dir string, store objstore.Store, opts Options, tune tuning) (*Cache, error) {
	opts = opts.withDefaults()
	if err := opts.validate(); err != nil {
		return nil, err
	}
	if err := os.MkdirAll(dir, dirMode); err != nil {
		return nil, fmt.Errorf("cache: create %s: %w", dir, err)
	}
	if err := os.Chmod(dir, dirMode); err != nil {
		return nil, fmt.Errorf("cache: chmod %s: %w", dir, err)
	}
	lock, err := lockDir(dir)
	if err != nil {
		return nil, err
	}
	tune.maxIdleFiles = maxIdleFilesFor(tune.maxIdleFiles, noFileLimit())
	c := &Cache{
		dir:        dir,
		stagingDir: filepath.Join(dir, stagingDirName),
		opts:       opts,
		tune:       tune,
		store:      store,
		lock:       lock,
		fetches:    newFetchSlots(opts.VolumeID, tune.initialFetches, maxFetches(opts), tune.fetchSample, time.Now),
		verifySem:  make(chan struct{}, tune.verifyParallel),
		stop:       make(chan struct{}),
		flushKick:  make(chan struct{}, 1),
		evictKick:  make(chan struct{}, 1),
		inodeKick:  make(chan struct{}, 1),
		idleJobs:   make(chan func()),
		objs:       make(map[string]*object),
		idle:       list.New(),
		idleFiles:  list.New(),
		dirtyObjs:  make(map[*object]struct{}),
		staleKeys:  make(map[string]struct{}),
		detached:   make(map[*object]struct{}),
		unlinked:   make(map[string]objID),
		evicting:   make(map[string]chan struct{}),
		verified:   make(map[uint64]struct{}),
		attrs:      make(map[string]pendingAttr),
		lists:      make(map[string]pendingList),
		prefetch:   newPrefetcher(opts),
	}
	c.disk.path = dir
	if err := c.openFiles(ctx); err != nil {
		c.releaseFiles()
		return nil, err
	}
	c.ctx, c.cancel = context.WithCancel(context.WithoutCancel(ctx))
	c.jobs.Add(3)
	go c.flushLoop()
	go c.evictLoop()
	go c.inodeLoop()
	c.kickEvict()
	return c, nil
}

// openFiles creates the layout, opens the index and recovers.
func (c *Cache) openFiles(ctx context.Context) error {
	for _, d := range []string{dataDirName, stagingDirName, writesDirName} {
		if err := os.MkdirAll(filepath.Join(c.dir, d), dirMode); err != nil {
			return fmt.Errorf("cache: create %s: %w", d, err)
		}
	}
	var err error
	if c.dataDir, err = os.Open(filepath.Join(c.dir, dataDirName)); err != nil {
		return fmt.Errorf("cache: open data directory: %w", err)
	}
	if c.ix, err = openIndex(filepath.Join(c.dir, indexFileName)); err != nil {
		return err
	}
	if c.store == nil {
		// The node view manages the cache of whatever origin it holds.
		_ = c.ix.view(func(tx *bolt.Tx) error {
			c.opts.Origin = string(tx.Bucket(bucketMeta).Get(metaOrigin))
			return nil
		})
	}
	if err := c.recover(ctx); err != nil {
		return err
	}
	return c.loadInodes()
}

func (c *Cache) releaseFiles() {
	if c.ix != nil {
		_ = c.ix.close()
	}
	if c.dataDir != nil {
		_ = c.dataDir.Close()
	}
	unlockDir(c.lock)
}

// lockDir takes the directory's lock file, or fails with ErrLocked. It
// retries briefly because the node view probes locks.
func lockDir(dir string) (*os.File, error) {
	f, err := os.OpenFile(filepath.Join(dir, lockFileName), os.O_RDWR|os.O_CREATE, fileMode)
	if err != nil {
		return nil, fmt.Errorf("cache: open lock: %w", err)
	}
	for delay := 10 * time.Millisecond; ; delay *= 2 {
		err = unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB)
		if !errors.Is(err, unix.EWOULDBLOCK) || delay > 200*time.Millisecond {
			break
		}
		time.Sleep(delay)
	}
	if err != nil {
		_ = f.Close()
		if errors.Is(err, unix.EWOULDBLOCK) {
			return nil, fmt.Errorf("%w: %s", ErrLocked, dir)
		}
		return nil, fmt.Errorf("cache: lock %s: %w", dir, err)
	}
	return f, nil
}

func unlockDir(f *os.File) {
	if f != nil {
		_ = unix.Flock(int(f.Fd()), unix.LOCK_UN)
		_ = f.Close()
	}
}

// Close flushes the index and releases the directory. Open handles fail
// with ErrClosed afterwards.
func (c *Cache) Close() error {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return nil
	}
	c.closed = true
	c.isClosed.Store(true)
	c.mu.Unlock()
	c.cancel()
	close(c.stop)
	c.jobs.Wait()

	err := c.flush()
	if err == nil {
		// The inode locks before the index, as everywhere: a rename or
		// a number handed out beside Close waits for its transaction
		// holding them (inode.go).
		t := &c.inodes
		t.commitMu.Lock()
		t.mu.Lock()
		err = c.ix.update(func(tx *bolt.Tx) error {
			if err := c.releaseInodesLocked(tx); err != nil {
				return err
			}
			return tx.Bucket(bucketMeta).Put(metaClean, []byte{1})
		})
		t.mu.Unlock()
		t.commitMu.Unlock()
	}
	c.mu.Lock()
	var doomed []*object
	for o := range c.detached {
		doomed = append(doomed, o)
	}
	clear(c.detached)
	for _, o := range c.objs {
		if !o.anyPresent() && o.file.Load() != nil {
			doomed = append(doomed, o) // a file without a record
		} else {
			o.closeFile()
		}
	}
	c.removeFilesLocked(doomed...)
	c.mu.Unlock()
	c.writeUsage()
	if cerr := c.ix.close(); err == nil {
		err = cerr
	}
	_ = c.dataDir.Close()
	unlockDir(c.lock)
	if err != nil {
		klog.ErrorS(err, "Closing cache", "volume", c.opts.VolumeID)
	}
	return err
}

// jobIdle is how long a job goroutine waits for the next job before it
// ends.
const jobIdle = 2 * time.Second

// goJob runs fn in a goroutine counted by jobs, unless the cache is
// closing: one that finished its job and waits for the next, else a new
// one. A fetch runs the SDK's deep call chain, which grew every new
// goroutine's stack by copying it several times (7% of the FUSE
// process's CPU in a cold small-file epoch); a reused goroutine has its
// stack grown already. The caller must not hold an object's mu.
func (c *Cache) goJob(fn func()) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return false
	}
	select {
	case c.idleJobs <- fn:
	default:
		c.jobs.Add(1)
		go c.jobWorker(fn)
	}
	return true
}

// jobWorker runs fn, then the jobs goJob hands it, until none came for
// jobIdle or the cache closes.
func (c *Cache) jobWorker(fn func()) {
	defer c.jobs.Done()
	idle := time.NewTimer(jobIdle)
	defer idle.Stop()
	for {
		fn()
		idle.Reset(jobIdle)
		select {
		case fn = <-c.idleJobs:
		case <-idle.C:
			return
		case <-c.stop:
			return
		}
	}
}

// StagingDir is a directory on the cache's file system where the FUSE layer
// stages written files before upload (so Install is a rename).
func (c *Cache) StagingDir() string { return c.stagingDir }

// WritesDir is a directory on the cache's file system for files being
// written through FUSE. Unlike StagingDir it is kept as it is across Open:
// a process that takes a live connection over adopts the files its
// predecessor's writers left there, so its contents belong to the FUSE
// layer, which removes what it does not adopt.
func (c *Cache) WritesDir() string { return filepath.Join(c.dir, writesDirName) }

// Dir is the cache directory.
func (c *Cache) Dir() string { return c.dir }

// Stats returns a snapshot of the counters.
func (c *Cache) Stats() Stats {
	s := Stats{
		UsedBytes:      c.used.Load(),
		Capacity:       c.opts.CacheSize,
		Objects:        c.objectCount.Load(),
		Hits:           c.stats.hits.Load(),
		Misses:         c.stats.misses.Load(),
		HitBytes:       c.stats.hitBytes.Load(),
		MissBytes:      c.stats.missBytes.Load(),
		BucketRequests: c.stats.bucketRequests.Load(),
		BucketBytes:    c.stats.bucketBytes.Load(),
		Evictions:      c.stats.evict.Load(),
		Passthrough:    c.stats.passthrough.Load(),
		FetchLimit:     int64(c.fetches.current()),
		FetchesPeak:    int64(c.fetches.peakInFlight()),
	}
	s.BufferBytes = c.BufferBytes()
	if c.opts.Tier != nil {
		s.Tiered, s.Tier = true, c.opts.Tier.Stats()
	}
	c.prefetchStats(&s)
	return s
}

// BufferBudget is the bound on the block buffers of each block size
// (the spec's BufferSize, defaulted).
func (c *Cache) BufferBudget() int64 { return c.opts.BufferSize }

// BufferBytes is Stats().BufferBytes without the rest of Stats: the
// memory of the block buffers allocated now.
func (c *Cache) BufferBytes() int64 {
	var n int64
	c.pools.Range(func(_, p any) bool {
		n += p.(*bufPool).bytes()
		return true
	})
	return n
}

func (c *Cache) dataPath(id objID) string { return filepath.Join(c.dir, dataRel(id)) }

func (c *Cache) pool(bs int64) *bufPool {
	if p, ok := c.pools.Load(bs); ok {
		return p.(*bufPool)
	}
	p, _ := c.pools.LoadOrStore(bs, newBufPool(bs, c.opts.BufferSize, c.tune.poolIdle))
	return p.(*bufPool)
}

func (c *Cache) nowNano() int64 { return c.opts.Now().UnixNano() }

// touch records an access to o, and queues o for the periodic flush
// when the access makes its access time due (flushGrain).
func (c *Cache) touch(o *object) {
	now := c.nowNano()
	o.atime.Store(now)
	c.lastAccess.Store(now)
	if atimeDue(now, o.flushedATime.Load(), int64(c.tune.atimeGrain)) {
		c.queueDueATime(o)
	}
}

// queueDueATime queues o for the periodic flush, unless it is queued.
func (c *Cache) queueDueATime(o *object) {
	if o.atimeQueued.CompareAndSwap(false, true) {
		c.dueMu.Lock()
		c.dueATimes = append(c.dueATimes, o)
		c.dueMu.Unlock()
	}
}

// takeDueATimes returns the objects touch queued and empties the queue;
// each may be queued again from then on.
func (c *Cache) takeDueATimes() []*object {
	c.dueMu.Lock()
	due := c.dueATimes
	c.dueATimes = nil
	c.dueMu.Unlock()
	for _, o := range due {
		o.atimeQueued.Store(false)
	}
	return due
}

func (c *Cache) logError(err error, msg string) {
	klog.ErrorS(err, msg, "volume", c.opts.VolumeID)
}

// Sync persists everything cached so far (blocks, access times,
// metadata, inode numbers) now instead of at the next periodic flush, e.g.
// before a planned handover to another process.
func (c *Cache) Sync() error { return c.flush() }

func kick(ch chan struct{}) {
	select {
	case ch <- struct{}{}:
	default:
	}
}

// tryFlock takes and at once releases an exclusive lock on f, reporting
// whether it was free.
func tryFlock(f *os.File) bool {
	if err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB); err != nil {
		return false
	}
	_ = unix.Flock(int(f.Fd()), unix.LOCK_UN)
	return true
}

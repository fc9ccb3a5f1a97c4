package cache

import (
	"sync"
	"sync/atomic"
	"time"

	"k8s.io/klog/v2"

	"github.com/basin-csi/basin/internal/mountdefaults"
	"github.com/basin-csi/basin/pkg/objstore"
)

// Directory prefetch. A training epoch opens every small file of the
// directories it reads, in an order of its own, one file per reader
// thread at a time: behind a link with tens of milliseconds to the first
// byte, each file then waits a round trip. Once a reader has opened
// prefetchMinOpens small objects not cached yet of a directory whose
// listing the cache holds and trusts (Prime, List), the cache fetches the
// directory's other small objects in the background, as ordinary cached
// objects (the same
// GETs conditional on the listed version, CRCs, index records), so that
// the reader finds them on local disk.
//
// Limits:
//   - fetch slots: prefetches run on Options.PrefetchWorkers goroutines
//     with a semaphore of their own (object.prefetching routes their GETs
//     to it), never on the MaxParallelFetches slots of foreground reads;
//     a reader that opens an object being prefetched joins its GET.
//   - room: a prefetch starts only while the cache stays below its low
//     watermark and the disk above its free-space floor after it, so it
//     never makes eviction remove anything.
//   - waste: the bytes prefetched and not opened since (PrefetchBudget);
//     while they are at the budget, prefetching pauses, and every open of
//     a prefetched object gives its bytes back.
//   - only objects up to prefetchMaxObject: larger files are the
//     sequential read-ahead's job.

const (
	// DefaultPrefetchBudget is the default of Options.PrefetchBudget.
	DefaultPrefetchBudget = mountdefaults.PrefetchBudget
	// DefaultPrefetchWorkers is the default of Options.PrefetchWorkers.
	DefaultPrefetchWorkers = 64
	// prefetchMaxObject is the largest object prefetched: one GET, and
	// a fetch buffer below a pool buffer's quarter (blockBuf allocates
	// it instead of taking a pooled block).
	prefetchMaxObject = 1 << 20
	// prefetchMinOpens is how many opens of small objects of a directory
	// start prefetching it: a single open (cat of one file) does not.
	prefetchMinOpens = 2
	// prefetchMaxQueue and prefetchMaxUnread bound the prefetcher's
	// memory: objects waiting, objects prefetched and not opened.
	prefetchMaxQueue  = 1 << 17
	prefetchMaxUnread = 1 << 17
	// prefetchRetry is how long a directory without a usable listing
	// waits before an open looks for its listing again.
	prefetchRetry = time.Second
)

// prefetcher is the directory prefetch state of one cache.
type prefetcher struct {
	// constant
	budget  int64 // > 0
	workers int
	sem     chan struct{} // fetch slots of prefetch GETs (cap workers)

	objects, bytes, readBytes, evictedBytes atomic.Int64

	mu sync.Mutex
	// guarded by mu
	dirs    map[string]*prefetchDir
	queue   []objstore.ObjectInfo // waiting, from head on
	head    int
	queued  map[string]struct{} // keys in queue[head:]
	running int                 // worker goroutines
	// stalled: the last worker stopped for want of room; until a worker
	// takes an object again, opens start one worker to look, not all.
	stalled bool
	// inflight: keys being prefetched, true once opened meanwhile.
	inflight map[string]bool
	// unread: prefetched objects not opened since, and their bytes.
	unread map[string]unreadObject
	// INVARIANT: pending == sum of unread sizes + sizes of inflight keys.
	pending int64
	// fetching: sizes of the inflight keys, not in Cache.used until
	// their blocks are written.
	fetching int64
}

// prefetchDir is a directory's prefetch state.
type prefetchDir struct {
	opens    int       // opens of its small objects counted
	listedAt time.Time // FetchedAt of the listing queued; zero: none yet
	triedAt  time.Time // last look for a listing that was not there
}

type unreadObject struct {
	size    int64
	evicted bool
}

// newPrefetcher returns the prefetcher of opts, nil when prefetch is off.
func newPrefetcher(opts Options) *prefetcher {
	if !opts.Prefetch {
		return nil
	}
	return &prefetcher{
		budget:   opts.PrefetchBudget,
		workers:  opts.PrefetchWorkers,
		sem:      make(chan struct{}, opts.PrefetchWorkers),
		dirs:     make(map[string]*prefetchDir),
		queued:   make(map[string]struct{}),
		inflight: make(map[string]bool),
		unread:   make(map[string]unreadObject),
	}
}

// prefetchOpened is told of every open of an object by a reader: it counts a
// prefetched object as read and, for an object not cached yet, may start
// prefetching its directory. Opens of cached objects do not count: a
// warm epoch (also after a remount) has nothing to prefetch, and looking
// would cost a read of the index per listed object.
func (c *Cache) prefetchOpened(info objstore.ObjectInfo, cached bool) {
	p := c.prefetch
	if p == nil {
		return
	}
	now := c.opts.Now()
	dir := parentPrefix(info.Key)
	p.mu.Lock()
	if u, ok := p.unread[info.Key]; ok {
		delete(p.unread, info.Key)
		p.pending -= u.size
		if !u.evicted {
			p.readBytes.Add(u.size)
		}
	}
	if _, ok := p.inflight[info.Key]; ok {
		p.inflight[info.Key] = true
	}
	if cached || info.Size > prefetchMaxObject {
		p.startLocked(c)
		p.mu.Unlock()
		return
	}
	d := p.dirs[dir]
	if d == nil {
		if len(p.dirs) >= primedMax {
			clear(p.dirs)
		}
		d = &prefetchDir{}
		p.dirs[dir] = d
	}
	d.opens++
	look := d.opens >= prefetchMinOpens &&
		(d.listedAt.IsZero() || !fresh(now, d.listedAt, c.opts.MetadataTTL)) &&
		(d.triedAt.IsZero() || now.Sub(d.triedAt) >= prefetchRetry)
	if !look {
		p.startLocked(c)
		p.mu.Unlock()
		return
	}
	d.triedAt = now
	p.mu.Unlock()

	l, ok, err := c.cachedListing(dir)
	if err != nil || !ok || !fresh(now, l.FetchedAt, c.opts.MetadataTTL) {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if d.listedAt.Equal(l.FetchedAt) {
		p.startLocked(c)
		return
	}
	d.listedAt = l.FetchedAt
	n := 0
	for _, o := range l.Objects {
		if o.Size <= 0 || o.Size > prefetchMaxObject || o.Key == info.Key || len(p.queue)-p.head >= prefetchMaxQueue {
			continue
		}
		if _, ok := p.queued[o.Key]; ok {
			continue
		}
		p.queued[o.Key] = struct{}{}
		p.queue = append(p.queue, o)
		n++
	}
	klog.V(4).InfoS("Prefetching directory", "volume", c.opts.VolumeID, "dir", dir, "objects", n)
	p.startLocked(c)
}

// startLocked starts workers for the queue, up to p.workers. The caller
// holds p.mu.
func (p *prefetcher) startLocked(c *Cache) {
	limit := p.workers
	if p.stalled {
		limit = 1
	}
	for p.running < limit && p.running < len(p.queue)-p.head && p.pending < p.budget {
		p.running++
		if !c.goJob(func() { c.prefetchWorker(p) }) {
			p.running--
			return
		}
	}
}

// prefetchWorker prefetches queued objects until the queue is empty, the
// budget or the cache's room is used up, or the cache closes.
func (c *Cache) prefetchWorker(p *prefetcher) {
	for {
		info, ok := p.next(c)
		if !ok {
			return
		}
		fetched := c.prefetchObject(info)
		p.mu.Lock()
		opened := p.inflight[info.Key]
		delete(p.inflight, info.Key)
		p.fetching -= info.Size
		switch {
		case !fetched:
			p.pending -= info.Size
		case opened:
			p.pending -= info.Size
			p.readBytes.Add(info.Size)
		default:
			p.unread[info.Key] = unreadObject{size: info.Size}
		}
		if fetched {
			p.objects.Add(1)
			p.bytes.Add(info.Size)
		}
		p.mu.Unlock()
	}
}

// next takes the next queued object and counts it in pending; false (and
// the worker ends) when there is none, or no budget or room for it.
func (p *prefetcher) next(c *Cache) (objstore.ObjectInfo, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for c.ctx.Err() == nil && p.head < len(p.queue) {
		info := p.queue[p.head]
		if p.pending+info.Size > p.budget || len(p.unread) >= prefetchMaxUnread {
			break // stays queued; an open that reads a prefetched object restarts
		}
		if !c.prefetchRoom(p.fetching + info.Size) {
			p.stalled = true
			break
		}
		p.stalled = false
		p.queue[p.head] = objstore.ObjectInfo{}
		p.head++
		delete(p.queued, info.Key)
		if p.head == len(p.queue) {
			p.queue, p.head = p.queue[:0], 0
		}
		if _, busy := p.inflight[info.Key]; busy {
			continue
		}
		if _, done := p.unread[info.Key]; done {
			continue
		}
		p.inflight[info.Key] = false
		p.pending += info.Size
		p.fetching += info.Size
		return info, true
	}
	p.running--
	return objstore.ObjectInfo{}, false
}

// prefetchRoom reports whether n more bytes (the object and the
// prefetches in flight) fit below the low watermark
// and above the free-space floor: room that no eviction has to make.
func (c *Cache) prefetchRoom(n int64) bool {
	if t := c.lowTarget(n); t >= 0 && c.used.Load() > t {
		return false
	}
	return !c.disk.belowFloor(c.opts.MinFreeRatio, n, c.tune.statfsInterval)
}

// prefetchObject fetches info into the cache unless it is there or being
// fetched; it reports whether it fetched it.
func (c *Cache) prefetchObject(info objstore.ObjectInfo) bool {
	h, err := c.openObject(c.ctx, info)
	if err != nil {
		return false
	}
	defer func() { _ = h.Close() }()
	o := h.o
	o.mu.Lock()
	busy := len(o.inflight) > 0
	o.mu.Unlock()
	if busy || o.allPresent() {
		return false
	}
	o.prefetching.Store(true)
	flights := c.acquire(o, 0, o.nblocks-1, forAhead)
	var ferr error
	for _, f := range flights {
		if f == nil {
			continue
		}
		select {
		case <-f.done:
			if f.err != nil && ferr == nil {
				ferr = f.err
			}
		case <-c.ctx.Done():
			return false
		}
	}
	o.prefetching.Store(false)
	if ferr != nil {
		klog.V(2).InfoS("Prefetch failed", "volume", c.opts.VolumeID, "key", info.Key, "err", ferr)
		return false
	}
	return true
}

// prefetchEvicted is told of every evicted key: bytes prefetched and not
// read yet are counted as evicted unread.
func (c *Cache) prefetchEvicted(key string) {
	p := c.prefetch
	if p == nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if u, ok := p.unread[key]; ok && !u.evicted {
		u.evicted = true
		p.unread[key] = u
		p.evictedBytes.Add(u.size)
	}
}

// prefetchSem is the fetch semaphore of the GETs of o while it is being
// prefetched, nil otherwise (the fetch slots of foreground reads).
func (c *Cache) prefetchSem(o *object) chan struct{} {
	if c.prefetch != nil && o.prefetching.Load() {
		return c.prefetch.sem
	}
	return nil
}

// prefetchStats fills s's prefetch counters.
func (c *Cache) prefetchStats(s *Stats) {
	if p := c.prefetch; p != nil {
		s.PrefetchObjects = p.objects.Load()
		s.PrefetchBytes = p.bytes.Load()
		s.PrefetchReadBytes = p.readBytes.Load()
		s.PrefetchEvictedBytes = p.evictedBytes.Load()
	}
}

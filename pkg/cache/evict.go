package cache

import (
	"bytes"
	"errors"
	"os"
	"sync"
	"time"

	bolt "go.etcd.io/bbolt"
	"golang.org/x/sys/unix"
	"k8s.io/klog/v2"
)

// Eviction removes whole objects, least recently used first, until the
// cache allocates at most LowWatermark*Capacity and the disk has its free
// floor back. It runs in the background once the cache is above the high
// watermark or the disk below MinFreeRatio, and on demand when a block
// would not fit. Pinned, dirty and in-flight objects are skipped.

// evictLoop evicts in the background when kicked and checks the disk's
// free space every second.
func (c *Cache) evictLoop() {
	defer c.jobs.Done()
	t := time.NewTicker(time.Second)
	defer t.Stop()
	for {
		select {
		case <-c.stop:
			return
		case <-t.C:
		case <-c.evictKick:
		}
		if c.overHigh() || c.disk.belowFloor(c.opts.MinFreeRatio, 0, c.tune.statfsInterval) {
			c.evict(c.lowTarget(0), c.freeGoal())
		}
	}
}

func (c *Cache) kickEvict() { kick(c.evictKick) }

func (c *Cache) kickEvictIfOver() {
	if c.overHigh() {
		c.kickEvict()
	}
}

func (c *Cache) overHigh() bool {
	return c.opts.CacheSize > 0 && float64(c.used.Load()) > c.opts.HighWatermark*float64(c.opts.CacheSize)
}

// lowTarget is the used bytes background eviction stops at, leaving room
// for need more; -1 means no capacity limit.
func (c *Cache) lowTarget(need int64) int64 {
	if c.opts.CacheSize <= 0 {
		return -1
	}
	return int64(c.opts.LowWatermark*float64(c.opts.CacheSize)) - need
}

// freeGoal is the free-space ratio eviction for the floor stops at.
func (c *Cache) freeGoal() float64 {
	if c.opts.MinFreeRatio < 0 {
		return -1
	}
	return min(c.opts.MinFreeRatio+(c.opts.HighWatermark-c.opts.LowWatermark), 0.99)
}

// admit reserves n bytes in used for a block about to be written,
// evicting on demand; false means the block must not be cached.
func (c *Cache) admit(n int64) bool {
	if !c.reserve(n) {
		c.noRoomAt.Store(c.nowNano())
		return false
	}
	if c.disk.belowFloor(c.opts.MinFreeRatio, n, c.tune.statfsInterval) {
		c.evictSync(n)
		if c.disk.belowFloor(c.opts.MinFreeRatio, n, 0) {
			c.used.Add(-n)
			c.noRoomAt.Store(c.nowNano())
			return false
		}
	}
	c.disk.wrote(n)
	return true
}

// reserve adds n to used if that stays within the capacity, evicting
// synchronously to make room; false means it does not fit and nothing was
// added. The caller settles the reservation against what it allocates.
func (c *Cache) reserve(n int64) bool {
	capacity := c.opts.CacheSize
	if capacity <= 0 {
		c.used.Add(n)
		return true
	}
	if c.tryReserve(n, capacity) {
		return true
	}
	c.evictSync(n)
	return c.tryReserve(n, capacity)
}

// tryReserve adds n to used if that stays within capacity. Unlike an add
// taken back when it overshot, it never shows used above capacity (to
// Stats, or to a concurrent reservation it would refuse).
func (c *Cache) tryReserve(n, capacity int64) bool {
	for {
		u := c.used.Load()
		if u+n > capacity {
			return false
		}
		if c.used.CompareAndSwap(u, u+n) {
			return true
		}
	}
}

// evictSync makes room for need bytes now: down to the high watermark
// (the background loop continues to the low one).
func (c *Cache) evictSync(need int64) {
	target := int64(-1)
	if c.opts.CacheSize > 0 {
		target = min(int64(c.opts.HighWatermark*float64(c.opts.CacheSize)), c.opts.CacheSize) - need
	}
	floor := -1.0
	if c.opts.MinFreeRatio >= 0 {
		floor = c.opts.MinFreeRatio
	}
	c.evict(target, floor)
	c.kickEvict()
}

// evict removes LRU objects until used <= target (no limit if target < 0)
// and the disk's free ratio reaches freeGoal (no goal if < 0), or nothing
// more is evictable. It returns the bytes freed.
func (c *Cache) evict(target int64, freeGoal float64) int64 {
	c.flushMu.Lock()
	defer c.flushMu.Unlock()
	var freed int64
	// excess is how many bytes must go, 0 when none.
	excess := func() int64 {
		var n int64
		if target >= 0 {
			n = c.used.Load() - target
		}
		if freeGoal >= 0 {
			n = max(n, c.disk.shortOf(freeGoal))
		}
		return max(n, 0)
	}
	var after []byte // lru key to resume the scan after
	for want := excess(); want > 0; want = excess() {
		victims, next := c.pickVictims(after, want)
		freed += c.removeVictims(victims)
		if next == nil {
			break
		}
		after = next
	}
	if freed > 0 {
		klog.V(2).InfoS("Evicted cache objects", "volume", c.opts.VolumeID, "freedBytes", freed, "usedBytes", c.used.Load())
	}
	return freed
}

// hasDetachedLocked reports whether a detached object of key is still
// pinned. The caller holds c.mu.
func (c *Cache) hasDetachedLocked(key string) bool {
	for o := range c.detached {
		if o.info.Key == key {
			return true
		}
	}
	return false
}

type victim struct {
	key   string
	ch    chan struct{}
	inMem *object
}

// pickVictims scans the LRU index after the given key for evictable
// objects allocating want bytes (at most evictBatch objects) and marks
// them evicting. next is where the scan stopped (nil at the end).
func (c *Cache) pickVictims(after []byte, want int64) ([]victim, []byte) {
	type cand struct {
		key   string
		atime int64
		alloc int64
	}
	var (
		cands []cand
		next  []byte
	)
	_ = c.ix.view(func(tx *bolt.Tx) error {
		cur := tx.Bucket(bucketLRU).Cursor()
		var k []byte
		if after == nil {
			k, _ = cur.First()
		} else if k, _ = cur.Seek(after); k != nil && bytes.Equal(k, after) {
			k, _ = cur.Next()
		}
		objs := tx.Bucket(bucketObjects)
		for ; k != nil && len(cands) < 2*c.tune.evictBatch; k, _ = cur.Next() {
			if len(k) < 8 {
				continue
			}
			at, _ := getU64(k[:8])
			cd := cand{key: string(k[8:]), atime: int64(at)}
			if raw := objs.Get(k[8:]); raw != nil {
				if h, _, err := decodeObjectHeader(raw); err == nil {
					cd.alloc = h.Alloc
				}
			}
			cands = append(cands, cd)
			next = append(next[:0], k...)
		}
		if k == nil {
			next = nil
		}
		return nil
	})
	var (
		out    []victim
		picked int64
	)
	c.mu.Lock()
	defer c.mu.Unlock()
	for i, cd := range cands {
		if picked >= want || len(out) >= c.tune.evictBatch {
			// Resume after the last candidate looked at.
			next = lruKey(cands[i-1].atime, cands[i-1].key)
			break
		}
		if _, busy := c.evicting[cd.key]; busy || c.hasDetachedLocked(cd.key) {
			continue // a pinned old version may use the record's file
		}
		o := c.objs[cd.key]
		if o != nil {
			o.mu.Lock()
			// An access the index does not show yet, unless within the
			// flusher's grain (flushGrain), moves o out of this place.
			skip := o.pins > 0 || o.dirty || !o.inIndex || len(o.inflight) > 0 || o.atime.Load()-cd.atime >= int64(c.tune.atimeGrain)
			o.mu.Unlock()
			if skip {
				continue
			}
			delete(c.objs, cd.key)
			delete(c.dirtyObjs, o)
			c.leaveIdleLocked(o)
		}
		v := victim{key: cd.key, ch: make(chan struct{}), inMem: o}
		c.evicting[cd.key] = v.ch
		out = append(out, v)
		picked += cd.alloc
	}
	return out, next
}

// removeVictims deletes the victims' records in one transaction, then
// their data files.
func (c *Cache) removeVictims(vs []victim) int64 {
	if len(vs) == 0 {
		return 0
	}
	paths := make([]string, len(vs))
	err := c.ix.update(func(tx *bolt.Tx) error {
		for i, v := range vs {
			paths[i] = ""
			if raw := tx.Bucket(bucketObjects).Get([]byte(v.key)); raw != nil {
				if h, _, err := decodeObjectHeader(raw); err == nil {
					paths[i] = c.dataPath(objectID(c.opts.Origin, v.key, h.Version, h.Size))
				}
			}
			if err := deleteObject(tx, v.key); err != nil {
				return err
			}
		}
		return nil
	})
	var freed int64
	if err == nil {
		for i, v := range vs {
			c.prefetchEvicted(v.key)
			if v.inMem != nil {
				v.inMem.mu.Lock()
				v.inMem.state = stateRemoved
				v.inMem.alloc = 0
				v.inMem.mu.Unlock()
				v.inMem.closeFile()
			}
			if paths[i] == "" {
				continue
			}
			if fi, err := os.Lstat(paths[i]); err == nil {
				if err := os.Remove(paths[i]); err == nil || errors.Is(err, os.ErrNotExist) {
					freed += allocated(fi)
				}
			}
		}
		c.used.Add(-freed)
		c.stats.evict.Add(int64(len(vs)))
	} else {
		klog.ErrorS(err, "Evicting cache objects", "volume", c.opts.VolumeID)
	}
	c.mu.Lock()
	for _, v := range vs {
		delete(c.evicting, v.key)
		close(v.ch)
	}
	c.mu.Unlock()
	return freed
}

// diskFree estimates the cache disk's free space with rate-limited statfs
// calls, subtracting what was written since the last one.
type diskFree struct {
	// constant
	path string

	mu sync.Mutex
	// guarded by mu
	at           time.Time
	free, total  int64
	writtenSince int64
}

func (d *diskFree) refresh(maxAge time.Duration) {
	if !d.at.IsZero() && time.Since(d.at) < maxAge {
		return
	}
	var st unix.Statfs_t
	if err := unix.Statfs(d.path, &st); err != nil {
		return
	}
	d.at = time.Now()
	d.free = int64(st.Bavail) * st.Bsize
	d.total = int64(st.Blocks) * st.Bsize
	d.writtenSince = 0
}

// shortOf returns how many bytes must be freed for the disk's free ratio
// to reach goal.
func (d *diskFree) shortOf(goal float64) int64 {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.refresh(0)
	if d.total <= 0 {
		return 0
	}
	return max(0, int64(goal*float64(d.total))-(d.free-d.writtenSince))
}

// freeRatio returns the free fraction of the disk after n more bytes.
func (d *diskFree) freeRatio(n int64) float64 {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.refresh(0)
	if d.total <= 0 {
		return 1
	}
	return float64(d.free-d.writtenSince-n) / float64(d.total)
}

// belowFloor reports whether writing n bytes would leave less than ratio
// of the disk free; statfs results up to maxAge old are reused.
func (d *diskFree) belowFloor(ratio float64, n int64, maxAge time.Duration) bool {
	if ratio < 0 {
		return false
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	d.refresh(maxAge)
	if d.total <= 0 {
		return false
	}
	return float64(d.free-d.writtenSince-n) < ratio*float64(d.total)
}

func (d *diskFree) wrote(n int64) {
	d.mu.Lock()
	d.writtenSince += n
	d.mu.Unlock()
}

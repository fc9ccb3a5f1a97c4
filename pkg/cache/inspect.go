package cache

import (
	"bytes"
	"container/heap"
	"context"
	"fmt"
	"math/bits"
	"sort"
	"strings"
	"time"

	bolt "go.etcd.io/bbolt"
)

// Inspection and maintenance of a cache, for the admin socket of a FUSE
// process and `csi-driver cache`: listing the cached objects, counting
// pinned ones and evicting down to a target on demand. offline.go opens a
// cache directory no process serves.

// Entry is one cached object version.
type Entry struct {
	Key     string
	Version string
	// Size is the object's length; Alloc the bytes its data file
	// allocates on disk (as last recorded in the index).
	Size, Alloc int64
	BlockSize   int64
	// Blocks is the object's number of blocks, PresentBlocks how many of
	// them are cached.
	Blocks, PresentBlocks int
	// LastAccess is the last read as persisted in the index (at most one
	// flush interval old), zero if unknown.
	LastAccess time.Time
}

// EntryOrder is the order Entries lists objects in.
type EntryOrder int

const (
	// OldestFirst lists the least recently used objects first: the next
	// eviction victims.
	OldestFirst EntryOrder = iota
	// LargestFirst lists the objects allocating the most bytes first.
	LargestFirst
)

// EntryQuery selects what Entries returns.
type EntryQuery struct {
	Order EntryOrder
	// Limit caps the number of entries; <= 0 means all of them.
	Limit int
	// Prefix keeps only keys starting with it.
	Prefix string
}

// entryBatch is how many index records one read transaction scans, so
// that a scan of a huge index never holds one transaction (and with it
// the index's remapping) for long.
const entryBatch = 4096

// Entries lists cached objects in the query's order, as the index has
// them: up to one flush interval behind (Sync first for an exact view).
// It reads the index in short transactions, so it is safe on a cache in
// use; objects cached or evicted meanwhile may or may not show up.
func (c *Cache) Entries(ctx context.Context, q EntryQuery) ([]Entry, error) {
	if c.isClosed.Load() {
		return nil, ErrClosed
	}
	switch q.Order {
	case OldestFirst:
		return c.oldestEntries(ctx, q)
	case LargestFirst:
		return c.largestEntries(ctx, q)
	default:
		return nil, fmt.Errorf("%w: entry order %d", ErrInvalidArgument, q.Order)
	}
}

// oldestEntries walks the LRU index from its oldest end.
func (c *Cache) oldestEntries(ctx context.Context, q EntryQuery) ([]Entry, error) {
	var out []Entry
	full := func() bool { return q.Limit > 0 && len(out) >= q.Limit }
	err := c.scanBucket(ctx, bucketLRU, func(tx *bolt.Tx, k, _ []byte) bool {
		if len(k) < 8 {
			return true
		}
		key := k[8:]
		if !strings.HasPrefix(string(key), q.Prefix) {
			return true
		}
		at, _ := getU64(k[:8])
		if e, ok := entryOf(tx, key, int64(at)); ok {
			out = append(out, e)
		}
		return !full()
	})
	return out, err
}

// largestEntries scans every record, keeping the Limit largest.
func (c *Cache) largestEntries(ctx context.Context, q EntryQuery) ([]Entry, error) {
	var top entryHeap
	err := c.scanBucket(ctx, bucketObjects, func(tx *bolt.Tx, k, v []byte) bool {
		if !strings.HasPrefix(string(k), q.Prefix) {
			return true
		}
		h, _, err := decodeObjectHeader(v)
		if err != nil {
			return true
		}
		if q.Limit > 0 && len(top) >= q.Limit && h.Alloc <= top[0].Alloc {
			return true
		}
		var at int64
		if raw := tx.Bucket(bucketATime).Get(k); raw != nil {
			if t, err := getU64(raw); err == nil {
				at = int64(t)
			}
		}
		e, ok := entryOf(tx, k, at)
		if !ok {
			return true
		}
		heap.Push(&top, e)
		if q.Limit > 0 && len(top) > q.Limit {
			heap.Pop(&top)
		}
		return true
	})
	out := []Entry(top)
	sort.Slice(out, func(i, j int) bool {
		if out[i].Alloc != out[j].Alloc {
			return out[i].Alloc > out[j].Alloc
		}
		return out[i].Key < out[j].Key
	})
	return out, err
}

// entryOf decodes key's object record into an Entry; atime 0 is unknown.
func entryOf(tx *bolt.Tx, key []byte, atime int64) (Entry, bool) {
	raw := tx.Bucket(bucketObjects).Get(key)
	if raw == nil {
		return Entry{}, false
	}
	rec, err := decodeObject(raw)
	if err != nil {
		return Entry{}, false
	}
	e := Entry{
		Key: string(key), Version: rec.Version, Size: rec.Size, Alloc: rec.Alloc,
		BlockSize: rec.BlockSize, Blocks: numBlocks(rec.Size, rec.BlockSize),
	}
	for _, w := range rec.Present {
		e.PresentBlocks += bits.OnesCount64(w)
	}
	if atime > 0 {
		e.LastAccess = time.Unix(0, atime)
	}
	return e, true
}

// scanBucket calls fn for every key of an index bucket in key order, in
// read transactions of at most entryBatch keys, until fn returns false.
func (c *Cache) scanBucket(ctx context.Context, name []byte, fn func(tx *bolt.Tx, k, v []byte) bool) error {
	var after []byte
	for {
		if err := ctx.Err(); err != nil {
			return err
		}
		done := true
		err := c.ix.view(func(tx *bolt.Tx) error {
			cur := tx.Bucket(name).Cursor()
			var k, v []byte
			if after == nil {
				k, v = cur.First()
			} else if k, v = cur.Seek(after); k != nil && bytes.Equal(k, after) {
				k, v = cur.Next()
			}
			for n := 0; k != nil; k, v = cur.Next() {
				if n == entryBatch {
					done = false
					return nil
				}
				n++
				after = append(after[:0], k...)
				if !fn(tx, k, v) {
					return nil
				}
			}
			return nil
		})
		if err != nil {
			return fmt.Errorf("cache: scan index: %w", err)
		}
		if done {
			return nil
		}
	}
}

// entryHeap is a min-heap of entries by allocated bytes.
type entryHeap []Entry

func (h entryHeap) Len() int           { return len(h) }
func (h entryHeap) Less(i, j int) bool { return h[i].Alloc < h[j].Alloc }
func (h entryHeap) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *entryHeap) Push(x any)        { *h = append(*h, x.(Entry)) }
func (h *entryHeap) Pop() any {
	old := *h
	e := old[len(old)-1]
	*h = old[:len(old)-1]
	return e
}

// PinnedObjects counts the objects pinned by open handles or running
// fetches (never evicted). It takes every in-memory object's lock once:
// for metrics, not for hot paths.
func (c *Cache) PinnedObjects() int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	var n int64
	count := func(o *object) {
		o.mu.Lock()
		if o.pins > 0 {
			n++
		}
		o.mu.Unlock()
	}
	for _, o := range c.objs {
		count(o)
	}
	for o := range c.detached {
		count(o)
	}
	return n
}

// GCResult is what GC did.
type GCResult struct {
	// Before and After are the bytes the cache allocated; Target what GC
	// evicted towards.
	Before, After, Target int64
	// Evicted counts the objects evicted meanwhile.
	Evicted int64
}

// GC evicts the least recently used objects now until the cache allocates
// at most target bytes; target < 0 means the low watermark of Capacity
// (where background eviction stops). Pinned, dirty and in-flight objects
// stay, so After may remain above Target.
func (c *Cache) GC(target int64) (GCResult, error) {
	if target < 0 {
		if c.opts.CacheSize <= 0 {
			return GCResult{}, fmt.Errorf("%w: the cache has no capacity; give a target", ErrInvalidArgument)
		}
		target = c.lowTarget(0)
	}
	return c.gcTo(target)
}

func (c *Cache) gcTo(target int64) (GCResult, error) {
	if c.isClosed.Load() {
		return GCResult{}, ErrClosed
	}
	res := GCResult{Before: c.used.Load(), Target: target}
	evictions := c.stats.evict.Load()
	c.evict(target, -1)
	res.After = c.used.Load()
	res.Evicted = c.stats.evict.Load() - evictions
	return res, nil
}

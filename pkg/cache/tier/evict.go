package tier

import (
	"cmp"
	"container/heap"
	"context"
	"encoding/hex"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/basin-csi/basin/pkg/objstore"
)

// Keeping a tier bounded: a pass (Evict, run by the controller for every
// tier in use) lists the tier's objects, deletes those last stored more
// than Limits.MaxAge ago, then the oldest until the rest fit in
// Limits.MaxBytes. Since a hit renews an object older than RefreshAfter,
// its last-modified time is its last use give or take RefreshAfter, and
// the oldest are the least recently used. A pass holds at most
// EvictOptions.MaxDeletes objects in memory and deletes at most that
// many; what is left beyond the limits goes at the next pass.

// KeyRoot is the key prefix of every tier object, under the tier's own
// prefix.
const KeyRoot = "basin/"

// Limits bound a tier. Zero is no bound of that kind.
type Limits struct {
	// MaxBytes bounds the bytes of the tier's objects (headers included).
	MaxBytes int64
	// MaxAge bounds the time since an object was last stored.
	MaxAge time.Duration
}

// IsZero reports whether l bounds nothing.
func (l Limits) IsZero() bool { return l.MaxBytes <= 0 && l.MaxAge <= 0 }

// Tighter returns the tighter of l and o in each bound (zero is none).
func (l Limits) Tighter(o Limits) Limits {
	tight := func(a, b int64) int64 {
		if a <= 0 || (b > 0 && b < a) {
			return b
		}
		return a
	}
	return Limits{MaxBytes: tight(l.MaxBytes, o.MaxBytes),
		MaxAge: time.Duration(tight(int64(l.MaxAge), int64(o.MaxAge)))}
}

// EvictOptions tune Evict; zero values mean the defaults.
type EvictOptions struct {
	Limits
	// MaxDeletes bounds the objects one pass deletes, and so its memory
	// (default 100,000).
	MaxDeletes int
	// DeleteConcurrency bounds the deletes in flight on stores without
	// batch deletes (default 8); S3 stores delete 1000 keys a request.
	DeleteConcurrency int
	// Now is the clock (tests); nil means time.Now.
	Now func() time.Time
}

// Defaults of EvictOptions.
const (
	DefaultMaxDeletes        = 100_000
	DefaultDeleteConcurrency = 8
)

// EvictResult is what a pass found and did.
type EvictResult struct {
	// Listed: the whole tier was listed, so Objects and Bytes are the
	// tier's objects and their bytes after the pass (as listed, less what
	// it deleted); otherwise they count what the listing saw.
	Listed         bool
	Objects, Bytes int64
	// Expired and OverBudget count the objects deleted for their age and
	// for the byte budget; EvictedBytes their bytes.
	Expired, OverBudget int
	EvictedBytes        int64
	// Foreign counts keys under KeyRoot that are not tier objects: never
	// deleted, not counted in Bytes.
	Foreign int
}

// Evict runs one pass over the tier in store (a view under the tier's
// prefix): it lists KeyRoot page by page, then deletes what opts.Limits
// exclude, oldest first, in batches. Every request is bounded by the
// store's timeout, the pass by ctx. On an error the result says what was
// done; the next pass starts over.
func Evict(ctx context.Context, store objstore.Store, opts EvictOptions) (EvictResult, error) {
	if opts.MaxDeletes <= 0 {
		opts.MaxDeletes = DefaultMaxDeletes
	}
	if opts.DeleteConcurrency <= 0 {
		opts.DeleteConcurrency = DefaultDeleteConcurrency
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	sel := newSelector(opts.Limits, opts.MaxDeletes, opts.Now())
	var res EvictResult
	err := objstore.ListAll(ctx, store, objstore.ListOptions{Prefix: KeyRoot}, func(p objstore.ListPage) error {
		for _, o := range p.Objects {
			if !isObjectKey(o.Key) {
				res.Foreign++
				continue
			}
			sel.add(o)
		}
		return nil
	})
	res.Objects, res.Bytes = sel.objects, sel.bytes
	if err != nil {
		return res, fmt.Errorf("tier: list %s: %w", KeyRoot, err)
	}
	res.Listed = true
	victims := sel.victims()
	const batch = 1000
	for len(victims) > 0 {
		chunk := victims[:min(batch, len(victims))]
		victims = victims[len(chunk):]
		keys := make([]string, len(chunk))
		for i, v := range chunk {
			keys[i] = v.Key
		}
		n, err := objstore.DeleteKeys(ctx, store, keys, opts.DeleteConcurrency)
		for _, v := range chunk[:n] { // which ones failed is not known: count the first n
			res.Objects--
			res.Bytes -= v.Size
			res.EvictedBytes += v.Size
			if v.expired {
				res.Expired++
			} else {
				res.OverBudget++
			}
		}
		if err != nil {
			return res, fmt.Errorf("tier: delete: %w", err)
		}
	}
	return res, nil
}

// isObjectKey reports whether key has the form of a tier object's key,
// "basin/<2 hex>/<64 hex>" with the directory the first two digits.
func isObjectKey(key string) bool {
	rest, ok := strings.CutPrefix(key, KeyRoot)
	if !ok || len(rest) != 2+1+64 || rest[2] != '/' || rest[:2] != rest[3:5] {
		return false
	}
	_, err := hex.DecodeString(rest[3:])
	return err == nil && strings.ToLower(rest) == rest
}

// victim is an object a pass deletes, and why.
type victim struct {
	objstore.ObjectInfo
	expired bool // older than MaxAge; otherwise beyond the budget
}

// selector picks a pass's victims from a listing seen once, in any
// order: the oldest objects, while they are older than MaxAge or the
// bytes exceed MaxBytes. It keeps only the max oldest it saw.
type selector struct {
	// constant
	limits Limits
	max    int
	cutoff time.Time // objects stored before it are expired; zero: none

	objects, bytes int64  // every object seen
	oldest         newest // the max oldest seen, the newest of them on top
}

func newSelector(l Limits, maxVictims int, now time.Time) *selector {
	s := &selector{limits: l, max: maxVictims}
	if l.MaxAge > 0 {
		s.cutoff = now.Add(-l.MaxAge)
	}
	return s
}

// add counts o and keeps it if it is among the max oldest so far.
func (s *selector) add(o objstore.ObjectInfo) {
	s.objects++
	s.bytes += o.Size
	if s.limits.IsZero() {
		return
	}
	switch {
	case len(s.oldest) < s.max:
		heap.Push(&s.oldest, o)
	case s.max > 0 && older(o, s.oldest[0]):
		s.oldest[0] = o
		heap.Fix(&s.oldest, 0)
	}
}

// victims returns the objects to delete, oldest first.
func (s *selector) victims() []victim {
	kept := slices.Clone([]objstore.ObjectInfo(s.oldest))
	slices.SortFunc(kept, compareAge)
	var out []victim
	bytes := s.bytes
	for _, o := range kept {
		expired := !s.cutoff.IsZero() && o.ModTime.Before(s.cutoff)
		if !expired && (s.limits.MaxBytes <= 0 || bytes <= s.limits.MaxBytes) {
			break // younger ones are neither expired nor needed for the budget
		}
		out = append(out, victim{ObjectInfo: o, expired: expired})
		bytes -= o.Size
	}
	return out
}

// compareAge orders objects oldest first, by key on equal times.
func compareAge(a, b objstore.ObjectInfo) int {
	return cmp.Or(a.ModTime.Compare(b.ModTime), strings.Compare(a.Key, b.Key))
}

func older(a, b objstore.ObjectInfo) bool { return compareAge(a, b) < 0 }

// newest is a heap of objects, the newest on top (heap.Interface).
type newest []objstore.ObjectInfo

func (h newest) Len() int           { return len(h) }
func (h newest) Less(i, j int) bool { return older(h[j], h[i]) }
func (h newest) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *newest) Push(x any)        { *h = append(*h, x.(objstore.ObjectInfo)) }
func (h *newest) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}

package admin

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/basin-csi/basin/pkg/cache"
)

// Volume answers questions about one volume's cache: a live cache in this
// process (ForCache), an offline cache directory (ForOffline), or the
// process serving the volume over its socket (Client).
type Volume interface {
	Stats(ctx context.Context) (Stats, error)
	Entries(ctx context.Context, q EntryQuery) ([]Entry, error)
	Verify(ctx context.Context) (VerifyReport, error)
	GC(ctx context.Context, r GCRequest) (GCResult, error)
}

// FSStats are the file system's counters a live volume adds to Stats.
type FSStats struct {
	PassthroughOpens, UserOpens int64
}

// local is a Volume over a cache opened in this process.
type local struct {
	// constant
	info    Info
	live    bool
	stats   func() cache.Stats
	pinned  func() int64
	fs      func() FSStats
	entries func(context.Context, cache.EntryQuery) ([]cache.Entry, error)
	verify  func(context.Context) (cache.Report, error)
	gc      func(GCRequest) (cache.GCResult, error)

	// maint serialises Verify and GC: each walks or rewrites the index
	// and one at a time is plenty.
	maint sync.Mutex
}

// ForCache is the Volume of a cache this process serves. fs, when not
// nil, adds the file system's counters.
func ForCache(c *cache.Cache, info Info, fs func() FSStats) Volume {
	return &local{
		info: info, live: true, stats: c.Stats, pinned: c.PinnedObjects, fs: fs,
		entries: func(ctx context.Context, q cache.EntryQuery) ([]cache.Entry, error) {
			// The index lags the cache by a flush interval: persist first
			// so that the listing shows what was just read.
			if err := c.Sync(); err != nil {
				return nil, err
			}
			return c.Entries(ctx, q)
		},
		verify: c.Verify,
		gc: func(r GCRequest) (cache.GCResult, error) {
			target := r.TargetBytes
			if target < 0 && r.CapacityBytes > 0 {
				target = int64(cache.DefaultLowWatermark * float64(r.CapacityBytes))
			}
			return c.GC(target)
		},
	}
}

// ForOffline is the Volume of a cache directory opened offline.
func ForOffline(o *cache.Offline) Volume {
	return &local{
		info:    Info{VolumeID: o.VolumeID(), CacheDir: o.Dir()},
		stats:   o.Stats,
		entries: o.Entries, verify: o.Verify,
		gc: func(r GCRequest) (cache.GCResult, error) {
			return o.GC(r.TargetBytes, r.CapacityBytes)
		},
	}
}

func (l *local) Stats(context.Context) (Stats, error) {
	s := l.stats()
	out := Stats{
		VolumeID: l.info.VolumeID, CacheDir: l.info.CacheDir, Live: l.live,
		UsedBytes: s.UsedBytes, CapacityBytes: s.Capacity, Objects: s.Objects,
		Hits: s.Hits, Misses: s.Misses, HitBytes: s.HitBytes, MissBytes: s.MissBytes, LocalOpens: s.Passthrough,
		BucketRequests: s.BucketRequests, BucketBytes: s.BucketBytes, Evictions: s.Evictions,
	}
	if l.live {
		out.Started = l.info.Started
	}
	if l.pinned != nil {
		out.PinnedObjects = l.pinned()
	}
	if l.fs != nil {
		f := l.fs()
		out.PassthroughOpens, out.UserOpens = f.PassthroughOpens, f.UserOpens
	}
	return out, nil
}

func (l *local) Entries(ctx context.Context, q EntryQuery) ([]Entry, error) {
	cq := cache.EntryQuery{Limit: q.Limit, Prefix: q.Prefix}
	switch q.Order {
	case Oldest, "":
		cq.Order = cache.OldestFirst
	case Largest:
		cq.Order = cache.LargestFirst
	default:
		return nil, fmt.Errorf("%w: order %q", ErrInvalidArgument, q.Order)
	}
	es, err := l.entries(ctx, cq)
	if err != nil {
		return nil, classify(err)
	}
	out := make([]Entry, len(es))
	for i, e := range es {
		out[i] = Entry{
			Key: e.Key, Version: e.Version, Size: e.Size, AllocBytes: e.Alloc, BlockSize: e.BlockSize,
			Blocks: e.Blocks, PresentBlocks: e.PresentBlocks, LastAccess: e.LastAccess,
		}
	}
	return out, nil
}

// Verify reports the problems it found in the VerifyReport; an error
// means the check itself could not run.
func (l *local) Verify(ctx context.Context) (VerifyReport, error) {
	l.maint.Lock()
	defer l.maint.Unlock()
	rep, err := l.verify(ctx)
	if err != nil && !errors.Is(err, cache.ErrInconsistent) {
		return VerifyReport{}, classify(err)
	}
	return VerifyReport{
		Objects: rep.Objects, Blocks: rep.Blocks, IndexedBytes: rep.IndexedBytes,
		FileBytes: rep.FileBytes, Problems: rep.Problems,
	}, nil
}

func (l *local) GC(_ context.Context, r GCRequest) (GCResult, error) {
	l.maint.Lock()
	defer l.maint.Unlock()
	res, err := l.gc(r)
	if err != nil {
		return GCResult{}, classify(err)
	}
	return GCResult{BeforeBytes: res.Before, AfterBytes: res.After, TargetBytes: res.Target, Evicted: res.Evicted}, nil
}

// classify maps the cache's argument errors to ErrInvalidArgument.
func classify(err error) error {
	if errors.Is(err, cache.ErrInvalidArgument) {
		return fmt.Errorf("%w: %w", ErrInvalidArgument, err)
	}
	return err
}

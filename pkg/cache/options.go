package cache

import (
	"fmt"
	"time"

	"github.com/basin-csi/basin/internal/mountdefaults"
	"github.com/basin-csi/basin/pkg/cache/tier"
	"github.com/basin-csi/basin/pkg/mountspec"
)

// Options configure one volume's cache. The mount's settings are its
// spec (pkg/mountspec), embedded with the spec's names and meanings: the
// cache reads CacheBlockSize, CacheSize, MetadataTTL,
// NegativeMetadataTTL, MaxParallelFetches, Prefetch, PrefetchBudget and
// BufferSize there, so a new setting the cache uses is a field of the spec and
// nothing here. A zero spec value means what it means in the spec
// (MetadataTTL 0: always revalidate; Prefetch false: off), except the
// sizes and counts, whose zero means the default. Zero values of the
// cache's own knobs below mean the defaults.
type Options struct {
	// Spec is the mount's settings. CacheBlockSize is the presence/CRC
	// granularity (a multiple of 4 KiB; objects cached with another block
	// size keep theirs); CacheSize caps the bytes the cache may allocate
	// on disk (0: only the free-space floor limits it); the TTLs say how
	// long cached attributes and listings (MetadataTTL) and "not found"
	// (NegativeMetadataTTL) are trusted (0: always revalidate, < 0:
	// forever); MaxParallelFetches bounds concurrent GETs (the cache
	// starts with at most 8 and raises the number while the measured
	// throughput grows with it, fetchtune.go, also within the buffer
	// budget, maxFetches); Prefetch turns directory prefetch (prefetch.go)
	// on, PrefetchBudget bounds the bytes it fetched and nobody opened
	// since; BufferSize bounds the block buffers of each block size
	// (writeback_pool.go).
	mountspec.Spec
	// VolumeID names the volume in logs and in the node budget.
	VolumeID string
	// Origin identifies what the store views, e.g. "s3://bucket/prefix/".
	// It is part of every data file's hash so entries of different
	// buckets/prefixes never collide.
	Origin string
	// HighWatermark and LowWatermark are fractions of CacheSize: eviction
	// starts above high and stops at low (defaults 0.95 and 0.85).
	HighWatermark, LowWatermark float64
	// MinFreeRatio keeps this fraction of the cache disk free (default 0.05;
	// < 0 disables the floor). Eviction for the floor stops once
	// MinFreeRatio + (HighWatermark - LowWatermark) of the disk is free.
	MinFreeRatio float64
	// SmallObjectSize: objects up to this size are fetched whole in one GET
	// on first miss (default 8 MiB).
	SmallObjectSize int64
	// PartSize is the ranged-GET size for large objects (default 8 MiB).
	PartSize int64
	// PrefetchWorkers is how many objects directory prefetch fetches at
	// once, beside MaxParallelFetches (default 64).
	PrefetchWorkers int
	// Tier is the shared cache tier read before the bucket and filled
	// with what the cache fetched from it (tierfetch.go); nil: none. The
	// caller closes it after the cache.
	Tier *tier.Tier
	// Now is the clock (tests); nil means time.Now.
	Now func() time.Time
}

// Defaults for Options' zero values. Those a volume can set are a mount's
// (internal/mountdefaults is the one place they are written).
const (
	DefaultBlockSize          = mountdefaults.CacheBlockSize
	DefaultHighWatermark      = 0.95
	DefaultLowWatermark       = 0.85
	DefaultMinFreeRatio       = 0.05
	DefaultSmallObjectSize    = 8 << 20
	DefaultPartSize           = mountdefaults.FetchPartSize
	DefaultMaxParallelFetches = mountdefaults.MaxParallelFetches
	DefaultBufferSize         = mountdefaults.BufferSize

	maxBlockSize = mountdefaults.MaxCacheBlockSize
	minPartSize  = 64 << 10
)

// withDefaults returns o with zero values replaced by the defaults.
func (o Options) withDefaults() Options {
	if o.CacheBlockSize == 0 {
		o.CacheBlockSize = DefaultBlockSize
	}
	if o.HighWatermark == 0 {
		o.HighWatermark = DefaultHighWatermark
	}
	if o.LowWatermark == 0 {
		o.LowWatermark = DefaultLowWatermark
	}
	if o.MinFreeRatio == 0 {
		o.MinFreeRatio = DefaultMinFreeRatio
	}
	if o.SmallObjectSize == 0 {
		o.SmallObjectSize = DefaultSmallObjectSize
	}
	if o.PartSize == 0 {
		o.PartSize = DefaultPartSize
	}
	if o.BufferSize == 0 {
		o.BufferSize = DefaultBufferSize
	}
	if o.MaxParallelFetches == 0 {
		o.MaxParallelFetches = DefaultMaxParallelFetches
	}
	if o.PrefetchBudget == 0 {
		o.PrefetchBudget = DefaultPrefetchBudget
	}
	if o.PrefetchWorkers == 0 {
		o.PrefetchWorkers = DefaultPrefetchWorkers
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	return o
}

// validate checks options after withDefaults.
func (o Options) validate() error {
	switch {
	case o.CacheBlockSize < 4096 || o.CacheBlockSize%4096 != 0 || o.CacheBlockSize > maxBlockSize:
		return fmt.Errorf("%w: CacheBlockSize %d is not a multiple of 4 KiB up to 1 GiB", ErrInvalidOptions, o.CacheBlockSize)
	case o.CacheSize < 0:
		return fmt.Errorf("%w: negative CacheSize", ErrInvalidOptions)
	case !(0 < o.LowWatermark && o.LowWatermark < o.HighWatermark && o.HighWatermark <= 1):
		return fmt.Errorf("%w: watermarks need 0 < low (%g) < high (%g) <= 1", ErrInvalidOptions, o.LowWatermark, o.HighWatermark)
	case o.MinFreeRatio >= 1:
		return fmt.Errorf("%w: MinFreeRatio %g must be below 1", ErrInvalidOptions, o.MinFreeRatio)
	case o.SmallObjectSize < 0:
		return fmt.Errorf("%w: negative SmallObjectSize", ErrInvalidOptions)
	case o.PartSize < minPartSize:
		return fmt.Errorf("%w: PartSize %d is below 64 KiB", ErrInvalidOptions, o.PartSize)
	case o.BufferSize < 0:
		return fmt.Errorf("%w: negative BufferSize", ErrInvalidOptions)
	case o.MaxParallelFetches < 1:
		return fmt.Errorf("%w: MaxParallelFetches must be positive", ErrInvalidOptions)
	case o.PrefetchWorkers < 1:
		return fmt.Errorf("%w: PrefetchWorkers must be positive", ErrInvalidOptions)
	}
	return nil
}

// maxFetches is the most GETs the cache lets the tuner keep in flight:
// MaxParallelFetches, and no more than three quarters of a pool
// (BufferSize) can feed, the rest being for blocks received and not yet
// written or read. A GET fills one block buffer at a time, or its part of
// a block larger than PartSize.
func maxFetches(o Options) int {
	return max(1, min(o.MaxParallelFetches, int(o.BufferSize*3/4/min(o.CacheBlockSize, o.PartSize))))
}

// fresh reports whether something fetched at t is still trusted under ttl.
func fresh(now, t time.Time, ttl time.Duration) bool {
	switch {
	case ttl < 0:
		return true
	case ttl == 0:
		return false
	default:
		return now.Sub(t) < ttl
	}
}

// tuning holds internal knobs; tests shorten them.
type tuning struct {
	// flushInterval is how often dirty index state is persisted.
	flushInterval time.Duration
	// maxIdle is how many unpinned objects keep their state in memory,
	// and maxIdleFiles how many of those keep their data file open
	// (idle.go).
	maxIdle, maxIdleFiles int
	// maxVerified bounds Cache.verified (about 20 bytes an entry); when
	// it is full it starts over, and the objects it forgot are verified
	// again at their next open.
	maxVerified int
	// statfsInterval rate-limits free-space checks on the write path.
	statfsInterval time.Duration
	// evictBatch is how many objects one eviction transaction removes.
	evictBatch int
	// verifyParallel bounds concurrent verification jobs, and so the
	// block buffers verification holds.
	verifyParallel int
	// initialFetches is how many GETs may be in flight before the
	// throughput was measured.
	initialFetches int
	// fetchSample is the period over which the fetch tuner measures the
	// throughput.
	fetchSample time.Duration
	// poolIdle is how long a block buffer pool keeps free buffers and
	// kept blocks nobody uses (writeback_pool.go).
	poolIdle time.Duration
	// atimeGrain: the periodic flush writes an access time that is all an
	// object changed only once it is this much newer than the indexed one
	// (flushGrain).
	atimeGrain time.Duration
}

func defaultTuning() tuning {
	return tuning{
		flushInterval:  500 * time.Millisecond,
		maxIdle:        idleMemory / idleObjectBytes,
		maxIdleFiles:   defaultMaxIdleFiles,
		maxVerified:    1 << 20,
		statfsInterval: 200 * time.Millisecond,
		evictBatch:     256,
		verifyParallel: 2,
		initialFetches: 8,
		fetchSample:    500 * time.Millisecond,
		poolIdle:       5 * time.Second,
		atimeGrain:     time.Minute,
	}
}

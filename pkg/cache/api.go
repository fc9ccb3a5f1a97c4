package cache

// CONTRACT FILE written by the lead so pkg/fuse can be built in parallel.
// The cache owner replaces the bodies (and may move code into other files)
// but keeps these exported names and signatures; changes go through the lead.

import (
	"context"
	"errors"
	"time"

	"github.com/basin-csi/basin/pkg/objstore"
)

var errNotImplemented = errors.New("cache: not implemented")

// Options configure one volume's cache. Zero values mean the defaults.
type Options struct {
	// VolumeID names the volume in logs and in the node budget.
	VolumeID string
	// Origin identifies what the store views, e.g. "s3://bucket/prefix/".
	// It is part of every data file's hash so entries of different
	// buckets/prefixes never collide.
	Origin string
	// BlockSize is the presence/CRC granularity (default 4 MiB).
	BlockSize int64
	// Capacity caps the bytes the cache may allocate on disk (0: only the
	// free-space floor limits it).
	Capacity int64
	// HighWatermark and LowWatermark are fractions of Capacity: eviction
	// starts above high and stops at low (defaults 0.95 and 0.85).
	HighWatermark, LowWatermark float64
	// MinFreeRatio keeps this fraction of the cache disk free (default 0.05).
	MinFreeRatio float64
	// MetadataTTL is how long cached attributes and listings are trusted:
	// 0 = always revalidate, < 0 = forever.
	MetadataTTL time.Duration
	// NegativeTTL is how long a "not found" is trusted (same conventions).
	NegativeTTL time.Duration
	// SmallObjectSize: objects up to this size are fetched whole in one GET
	// on first miss (default 8 MiB).
	SmallObjectSize int64
	// PartSize is the ranged-GET size for large objects (default 8 MiB).
	PartSize int64
	// MaxParallelFetches bounds concurrent GETs of this cache (default 8).
	MaxParallelFetches int
	// Now is the clock (tests); nil means time.Now.
	Now func() time.Time
}

// Listing is one directory level: the objects and common prefixes directly
// under a prefix ending in "/" (or "" for the root), delimiter "/".
type Listing struct {
	Objects   []objstore.ObjectInfo
	Prefixes  []string
	FetchedAt time.Time
}

// Stats are counters and gauges of one cache.
type Stats struct {
	UsedBytes, Capacity, Objects           int64
	Hits, Misses, HitBytes, MissBytes      int64
	BucketRequests, BucketBytes, Evictions int64
	Passthrough                            int64
}

// Cache is one volume's cache directory. Safe for concurrent use.
type Cache struct{}

// Open opens (creating if needed, mode 0700) the cache in dir for the
// objects of store, recovering from any crash first.
func Open(ctx context.Context, dir string, store objstore.Store, opts Options) (*Cache, error) {
	return nil, errNotImplemented
}

// Close flushes the index and releases the directory.
func (c *Cache) Close() error { return errNotImplemented }

// Stat returns the object's attributes: from the index while fresh per
// MetadataTTL, else by a HEAD. A fresh negative entry returns
// objstore.ErrNotFound without a request.
func (c *Cache) Stat(ctx context.Context, key string) (objstore.ObjectInfo, error) {
	return objstore.ObjectInfo{}, errNotImplemented
}

// List returns the full listing (all pages) of one directory level, from
// the index while fresh, else from the bucket; it also records each
// object's attributes so a following Stat needs no request.
func (c *Cache) List(ctx context.Context, dirPrefix string) (Listing, error) {
	return Listing{}, errNotImplemented
}

// Invalidate forgets key's attributes (positive or negative) and the
// listing of its parent directory, after a local write/unlink/rename.
func (c *Cache) Invalidate(key string) {}

// InodeOf returns the stable inode number of a volume path (no leading or
// trailing slash; "" is the root, inode 1), allocating one if new. The same
// path keeps its number across Close/Open.
func (c *Cache) InodeOf(path string) (uint64, error) { return 0, errNotImplemented }

// PathOf returns the path an inode number was allocated for.
func (c *Cache) PathOf(ino uint64) (string, bool) { return "", false }

// OpenObject pins one object version for reading: it is not evicted until
// the handle is closed. A version other than the cached one invalidates the
// cached data.
func (c *Cache) OpenObject(ctx context.Context, info objstore.ObjectInfo) (*Handle, error) {
	return nil, errNotImplemented
}

// StagingDir is a directory on the cache's file system where the FUSE layer
// stages written files before upload (so Install is a rename).
func (c *Cache) StagingDir() string { return "" }

// Install makes a staged local file the complete cached copy of info (an
// object version just uploaded from it). The file is moved, not copied.
func (c *Cache) Install(ctx context.Context, info objstore.ObjectInfo, stagedPath string) error {
	return errNotImplemented
}

// Stats returns a snapshot of the counters.
func (c *Cache) Stats() Stats { return Stats{} }

// Handle is a pinned object version.
type Handle struct{}

// Info is the pinned version's attributes.
func (h *Handle) Info() objstore.ObjectInfo { return objstore.ObjectInfo{} }

// ReadAt reads like io.ReaderAt: present blocks from the data file, missing
// ones fetched (single-flight per block). If the object changed in the
// bucket it returns an error wrapping objstore.ErrPreconditionFailed.
func (h *Handle) ReadAt(ctx context.Context, p []byte, off int64) (int, error) {
	return 0, errNotImplemented
}

// Prefetch starts background fetches of [off, off+length) and returns at
// once; fetches outlive the call but not the cache.
func (h *Handle) Prefetch(off, length int64) {}

// LocalPath returns the data file's path when the whole object is present
// and verified, so the FUSE layer can open it for passthrough.
func (h *Handle) LocalPath() (string, bool) { return "", false }

// Close unpins the object.
func (h *Handle) Close() error { return nil }

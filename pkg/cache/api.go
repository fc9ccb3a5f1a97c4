package cache

// The public surface of the cache, by concern:
//   - cache.go: Open, Close, Sync, Stats, Dir, StagingDir, WritesDir; options.go:
//     Options; errors.go: the sentinel errors.
//   - metadata.go: Stat, List, Invalidate; ownwrites.go: Wrote, MadeDir;
//     prime.go: Prime; knowndir.go: KnownDir.
//   - inode.go: InodeOf, InodesOf, PathOf; inode_rename.go: RenameInodes.
//   - handle.go: OpenObject and Handle (ReadAt, Prefetch, LocalPath,
//     Info, Close); install.go: Install.
//   - inspect.go: Entries, PinnedObjects, GC; inspect_offline.go:
//     OpenOffline, IsCacheDir, InUse; verify.go: Verify.
//   - node.go: the node view (NewNode, Node) over every volume's cache.
//
// This file holds the value types the methods share.

import (
	"time"

	"github.com/basin-csi/basin/pkg/cache/tier"
	"github.com/basin-csi/basin/pkg/objstore"
)

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
	// Directory prefetch (prefetch.go): objects and bytes prefetched,
	// prefetched bytes opened later, and prefetched bytes evicted before
	// they were opened.
	PrefetchObjects, PrefetchBytes          int64
	PrefetchReadBytes, PrefetchEvictedBytes int64
	// FetchLimit is how many GETs the fetch tuner lets run at once now,
	// FetchesPeak the most that ran at once so far.
	FetchLimit, FetchesPeak int64
	// BufferBytes is the memory of the block buffers allocated now (off
	// the Go heap): fetches, kept blocks, free buffers not yet given back.
	BufferBytes int64
	// Tier is the shared cache tier's (zero without one, Tiered false).
	Tiered bool
	Tier   tier.Stats
}

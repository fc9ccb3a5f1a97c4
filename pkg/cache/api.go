package cache

// The public surface of the cache. Originally the lead's contract file;
// the exported names and signatures it listed are kept, their code lives
// by concern: Open/Close/Stats in cache.go, Stat/List/Invalidate in
// metadata.go, InodeOf/PathOf in inode.go, OpenObject and Handle in
// handle.go, Install in install.go, Options in options.go.
//
// Additions: Cache.InodesOf, Cache.Verify (+ Report), Cache.Dir, the node
// view (Node, NewNode, VolumeUsage, EnforceResult) and the sentinel errors
// in errors.go.

import (
	"time"

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
}

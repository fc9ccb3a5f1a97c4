package runner

import (
	"fmt"

	"github.com/basin-csi/basin/bench/sut"
	"github.com/basin-csi/basin/pkg/cache"
)

// A system whose cache disk cannot hold a scenario's data above Basin's
// free-space floor (cache.DefaultMinFreeRatio of the disk) measures
// something else: the cache refuses blocks, the read-ahead pauses, and
// what the cold pass read is not all there for the warm one. A quick run
// with 9.6 GB free on a 252 GB disk (floor 12.6 GB) read its checkpoints
// at 75 MB/s cold and after drop_caches alike; with 21 GB free the same
// binaries gave 188-211 and 980-1,258 MB/s. So a system with a cache is
// only played with room for the largest data set above the floor, twice
// over when the bucket's data is on the same disk (what the write
// scenario writes lands there too), and its cells say why not otherwise.

// DiskRoom is the room on the cache disk.
type DiskRoom struct {
	// Free (to unprivileged users, as the cache's floor counts it) and
	// Total bytes.
	Free, Total int64
	// BucketHere: the local object store keeps its data on this disk, so
	// what the write scenario writes lands on it twice.
	BucketHere bool
}

// roomSlack is kept free above the floor and the data, for logs, the
// index and the staging of small writes.
const roomSlack = 1 << 30

// roomNeeded is the free space a system's pass needs on the cache disk
// above the floor: the largest set, twice when the bucket is on the disk.
func (c Config) roomNeeded(bucketHere bool) int64 {
	var largest int64
	for _, s := range []int64{c.Sets.Small.TotalBytes(), c.Sets.Checkpoint.TotalBytes(), c.Sets.Write.TotalBytes(), c.Sets.Create.TotalBytes()} {
		largest = max(largest, s)
	}
	if bucketHere {
		largest *= 2
	}
	return largest + roomSlack
}

// roomProblem says why the cache disk is too full for a pass of sys, ""
// when it is not, when sys keeps no cache there, or when the runner cannot
// tell (no CacheDisk hook).
func (r *Runner) roomProblem(sys sut.System) string {
	if r.hooks.CacheDisk == nil || !cachesOnDisk(sys) {
		return ""
	}
	d, err := r.hooks.CacheDisk()
	if err != nil {
		return fmt.Sprintf("free space of the cache disk unknown: %v", err)
	}
	floor := int64(cache.DefaultMinFreeRatio * float64(d.Total))
	need := r.cfg.roomNeeded(d.BucketHere)
	if d.Free-need >= floor {
		return ""
	}
	return fmt.Sprintf("the cache disk has %.1f GB free of %.1f GB: after the %.1f GB a pass caches and writes, it would be below the cache's free-space floor (%.1f GB), where blocks are refused and cold reads fetch twice; free %.1f GB",
		gb(d.Free), gb(d.Total), gb(need), gb(floor), gb(floor+need-d.Free))
}

// cachesOnDisk reports whether sys keeps a cache on the disk: not the
// local directory, nor a direct client.
func cachesOnDisk(sys sut.System) bool {
	if _, client := sys.(sut.Client); client {
		return false
	}
	return sys.Backend() != sut.BackendLocal
}

func gb(n int64) float64 { return float64(n) / 1e9 }

package warmup

import (
	"fmt"
	"os"
	"slices"
	"strings"

	"golang.org/x/sys/unix"
)

// uncapped is the capacity a Basin mount reports for a cache without a
// size cap (pkg/fuse: 1 PiB); anything this large is treated as no cap.
const uncapped = 1 << 50

// fitTolerance: a cache holding at least this share of the warmed bytes
// counts as holding them all (block rounding, files that changed).
const fitTolerance = 0.97

// CacheUsage is what a Basin mount reports about its cache through
// statfs (the same numbers as NodeGetVolumeStats).
type CacheUsage struct {
	Capacity, Used int64
	// Uncapped: the volume has no cache size cap; the cache is bounded by
	// the cache disk's free-space floor, which statfs does not show.
	Uncapped bool
}

// CacheReport compares what was warmed with what the cache can hold.
type CacheReport struct {
	// Known: the paths are on a FUSE mount, whose statfs is taken as the
	// cache's capacity and use. False for other file systems: no verdict.
	Known bool
	// Before and After are the cache's figures around the run.
	Before, After CacheUsage
	// SetBytes is the size of every file under the paths (this run's and
	// earlier runs' when resumed).
	SetBytes int64
	// Fits: every warmed byte can be in the cache, and the cache's use
	// after the run is consistent with it being there.
	Fits bool
	// Verdict says so in a sentence.
	Verdict string
}

// cacheUsage takes statfs of path; ok is false unless it is on a Basin
// mount.
func cacheUsage(path string) (CacheUsage, bool) {
	var st unix.Statfs_t
	if err := unix.Statfs(path, &st); err != nil || st.Type != unix.FUSE_SUPER_MAGIC || !onBasin(path) {
		return CacheUsage{}, false
	}
	bs := st.Bsize
	u := CacheUsage{Capacity: int64(st.Blocks) * bs, Used: int64(st.Blocks-st.Bfree) * bs}
	u.Uncapped = u.Capacity >= uncapped
	return u, true
}

// judge fills Fits and Verdict.
func (r *CacheReport) judge(metadataOnly bool) {
	set, c, used := r.SetBytes, r.After.Capacity, r.After.Used
	switch {
	case !r.Known:
		r.Verdict = "not a FUSE mount: no cache figures (statfs), no verdict"
	case metadataOnly:
		r.Fits = true
		r.Verdict = "metadata only: listings and attributes cached, no data read"
	case r.After.Uncapped:
		r.Fits = true
		r.Verdict = fmt.Sprintf("the cache has no size cap (%s used now); it is bounded by the cache disk's free-space floor, which statfs does not show",
			FormatBytes(used))
	case set > c:
		r.Verdict = fmt.Sprintf("does NOT fit: the paths hold %s, the cache at most %s; the cache evicts least recently used objects, so at least %s of what was read (the earliest files) is no longer cached",
			FormatBytes(set), FormatBytes(c), FormatBytes(set-c))
	case float64(used) < fitTolerance*float64(set):
		r.Verdict = fmt.Sprintf("partly evicted: the paths hold %s but the cache holds only %s now (cap %s); objects were evicted (the node's cache budget, or other reads) or reads failed",
			FormatBytes(set), FormatBytes(used), FormatBytes(c))
	default:
		r.Fits = true
		r.Verdict = fmt.Sprintf("fits: the paths hold %s, the cache holds %s of %s", FormatBytes(set), FormatBytes(used), FormatBytes(c))
	}
}

// basinType is the file system type of Basin mounts in /proc/self/mountinfo
// (node plugin mounts and `csi-driver mount` alike).
const basinType = "fuse.basin"

// onBasin reports whether the mount holding path (the longest mount point
// that is a prefix of it) is a Basin mount. Without a readable mountinfo
// it trusts statfs alone.
func onBasin(path string) bool {
	b, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		return true
	}
	best, fstype := "", ""
	for line := range strings.SplitSeq(string(b), "\n") {
		// id parent major:minor root mountpoint options [optional...] - fstype source super
		f := strings.Fields(line)
		sep := slices.Index(f, "-")
		if len(f) < 5 || sep < 0 || sep+1 >= len(f) {
			continue
		}
		mp := strings.ReplaceAll(f[4], "\\040", " ")
		if (path == mp || strings.HasPrefix(path, strings.TrimSuffix(mp, "/")+"/")) && len(mp) >= len(best) {
			best, fstype = mp, f[sep+1]
		}
	}
	return fstype == basinType
}

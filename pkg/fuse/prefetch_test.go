package fuse

import (
	"fmt"
	"github.com/basin-csi/basin/pkg/mountspec"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/basin-csi/basin/pkg/cache"
)

// Directory prefetch (pkg/cache prefetch.go) through a real mount of a
// MinIO bucket: the cache's counters tell what went to the bucket.

const prefetchFileSize = 64 << 10

// prefetchBucket mounts a MinIO bucket holding train/00..29 (64 KiB
// each), train/big.bin (2 MiB, above the prefetch threshold) and
// other/x, with directory prefetch on or off and the given budget.
func prefetchBucket(t *testing.T, prefetch bool, budget int64) *testMount {
	t.Helper()
	store := newMinIOStore(t, nil)
	for i := range 30 {
		put(t, store, fmt.Sprintf("train/%02d", i), randomBytes(prefetchFileSize, byte(i)))
	}
	put(t, store, "train/big.bin", randomBytes(2<<20, 99))
	put(t, store, "other/x", randomBytes(prefetchFileSize, 100))
	return mountStore(t, store, mountSpec{cache: realCache, noPrefetch: !prefetch, prefetchBudget: budget,
		cfg: Config{Spec: mountspec.Spec{MetadataTTL: time.Minute, NegativeMetadataTTL: 5 * time.Second}}})
}

func readTrain(t *testing.T, tm *testMount, i int) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(tm.dir, "train", fmt.Sprintf("%02d", i)))
	if err != nil || len(b) != prefetchFileSize || b[0] != randomBytes(1, byte(i))[0] {
		t.Fatalf("train/%02d: %d bytes, %v", i, len(b), err)
	}
}

// waitStats polls the cache's counters until ok holds (or fails the test
// after 20 s) and returns them.
func waitStats(t *testing.T, tm *testMount, what string, ok func(cache.Stats) bool) cache.Stats {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		s := tm.cache.Stats()
		if ok(s) {
			return s
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: still %+v", what, s)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestReadingADirectoryPrefetchesTheRest: once a reader opened two files
// of a listed directory, the mount fetches the directory's other small
// files in the background — not the large one, not another directory's
// — and the reader then finds every one of them cached: reading them
// sends no request.
func TestReadingADirectoryPrefetchesTheRest(t *testing.T) {
	tm := prefetchBucket(t, true, 0)
	readTrain(t, tm, 7)
	readTrain(t, tm, 21)
	waitStats(t, tm, "prefetch of train/", func(s cache.Stats) bool { return s.PrefetchObjects >= 28 })
	time.Sleep(200 * time.Millisecond) // nothing more comes
	s := tm.cache.Stats()
	if s.PrefetchObjects != 28 || s.PrefetchBytes != 28*prefetchFileSize {
		t.Fatalf("prefetched %d objects, %d bytes; want the 28 other small files of train/ (%d bytes)",
			s.PrefetchObjects, s.PrefetchBytes, 28*prefetchFileSize)
	}
	before := s.BucketRequests
	for i := range 30 {
		readTrain(t, tm, i)
	}
	s = tm.cache.Stats()
	if n := s.BucketRequests - before; n != 0 {
		t.Errorf("reading the prefetched files sent %d requests, want 0", n)
	}
	if s.PrefetchReadBytes != 28*prefetchFileSize || s.PrefetchEvictedBytes != 0 {
		t.Errorf("prefetched bytes read %d, evicted %d; want %d and 0", s.PrefetchReadBytes, s.PrefetchEvictedBytes, 28*prefetchFileSize)
	}
}

// TestPrefetchOffSwitch: with prefetch off, reading files of a listed
// directory fetches those files only.
func TestPrefetchOffSwitch(t *testing.T) {
	tm := prefetchBucket(t, false, 0)
	before := tm.cache.Stats().BucketRequests
	for _, i := range []int{3, 9, 27} {
		readTrain(t, tm, i)
	}
	time.Sleep(500 * time.Millisecond)
	s := tm.cache.Stats()
	if s.PrefetchObjects != 0 || s.BucketRequests-before > 3+2 {
		t.Errorf("prefetch off: %d objects prefetched, %d requests for 3 files (want 0, at most 5 with the listings)",
			s.PrefetchObjects, s.BucketRequests-before)
	}
}

// TestPrefetchStopsAtTheUnreadBudget: prefetching pauses once the bytes
// fetched and not opened reach the budget, and goes on as the reader opens
// prefetched files.
func TestPrefetchStopsAtTheUnreadBudget(t *testing.T) {
	tm := prefetchBucket(t, true, 5*prefetchFileSize)
	readTrain(t, tm, 0)
	readTrain(t, tm, 1)
	waitStats(t, tm, "prefetch up to the budget", func(s cache.Stats) bool { return s.PrefetchObjects >= 5 })
	time.Sleep(300 * time.Millisecond)
	if s := tm.cache.Stats(); s.PrefetchObjects != 5 {
		t.Fatalf("prefetched %d objects with a budget of 5 unread, want 5", s.PrefetchObjects)
	}
	// Reading two of the prefetched files (2..6 come first in the
	// listing) gives their budget back: two more are prefetched.
	readTrain(t, tm, 2)
	readTrain(t, tm, 3)
	waitStats(t, tm, "prefetch after reads", func(s cache.Stats) bool { return s.PrefetchObjects >= 7 })
	time.Sleep(300 * time.Millisecond)
	if s := tm.cache.Stats(); s.PrefetchObjects != 7 || s.PrefetchReadBytes != 2*prefetchFileSize {
		t.Fatalf("after reading 2 prefetched files: %d prefetched, %d bytes read; want 7 and %d", s.PrefetchObjects, s.PrefetchReadBytes, 2*prefetchFileSize)
	}
}

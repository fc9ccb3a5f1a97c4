package cache

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/basin-csi/basin/pkg/objstore/objstoretest"
)

// prefetchIdle reports whether no prefetch worker runs.
func prefetchIdle(c *Cache) bool {
	c.prefetch.mu.Lock()
	defer c.prefetch.mu.Unlock()
	return c.prefetch.running == 0
}

// TestPrefetchStaysInTheCachesRoom: directory prefetch fills the cache up
// to its low watermark and no further, evicting nothing; when foreground
// reads later make eviction remove prefetched objects nobody opened,
// their bytes count as evicted unread.
func TestPrefetchStaysInTheCachesRoom(t *testing.T) {
	opts := testOpts()
	opts.CacheSize = 2 * mib // low watermark 1.7 MiB: 27 objects of 64 KiB
	c, fake, _ := newFixture(t, opts)
	ctx := context.Background()
	for _, dir := range []string{"d", "e"} {
		for i := range 40 {
			put(t, fake, fmt.Sprintf("%s/%02d", dir, i), randBytes(uint64(i), 64*kib))
		}
	}
	l, err := c.List(ctx, "d/")
	if err != nil || len(l.Objects) != 40 {
		t.Fatalf("List: %d objects, %v", len(l.Objects), err)
	}
	readObject(t, c, l.Objects[5])
	readObject(t, c, l.Objects[30])
	waitFor(t, "prefetch to start and end", func() bool { return c.Stats().PrefetchObjects > 0 && prefetchIdle(c) })
	waitQuiescent(t, c)
	s := c.Stats()
	low := int64(opts.withDefaults().LowWatermark * float64(opts.CacheSize))
	// The room a prefetch measures counts the bytes written and the
	// prefetches in flight, not a foreground fetch in flight: the second
	// read's block counts from its write, which ends after the read, so a
	// prefetch that started first may take one object more (25 or 26 of
	// 64 KiB beside the two read) and end one object above the watermark.
	if s.UsedBytes > low+64*kib || s.Evictions != 0 {
		t.Errorf("after prefetch: %d bytes used (low watermark %d), %d evictions; want at most the watermark and one object, none", s.UsedBytes, low, s.Evictions)
	}
	if s.PrefetchObjects < 20 || s.PrefetchObjects > 26 {
		t.Errorf("prefetched %d objects of 64 KiB into a cache with room for 25 or 26 below its low watermark", s.PrefetchObjects)
	}

	// Reads of another directory push the cache over its high watermark:
	// eviction removes the oldest objects, the unread prefetched ones among
	// them.
	le, err := c.List(ctx, "e/")
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range le.Objects[:12] {
		readObject(t, c, o)
		time.Sleep(2 * time.Millisecond) // distinct access times
	}
	waitFor(t, "eviction of unread prefetched objects", func() bool {
		s := c.Stats()
		return s.Evictions > 0 && s.PrefetchEvictedBytes > 0
	})
	if s := c.Stats(); s.PrefetchEvictedBytes%(64*kib) != 0 || s.PrefetchReadBytes != 0 {
		t.Errorf("prefetched bytes evicted unread %d, read %d; want whole objects, 0", s.PrefetchEvictedBytes, s.PrefetchReadBytes)
	}
}

// TestPrefetchNeedsTwoOpensAndAListing: one open of a listed directory,
// or opens in a directory without a listing, prefetch nothing.
func TestPrefetchNeedsTwoOpensAndAListing(t *testing.T) {
	c, fake, _ := newFixture(t, testOpts())
	ctx := context.Background()
	for i := range 10 {
		put(t, fake, fmt.Sprintf("listed/%d", i), randBytes(uint64(i), 4*kib))
		put(t, fake, fmt.Sprintf("unlisted/%d", i), randBytes(uint64(i), 4*kib))
	}
	l, err := c.List(ctx, "listed/")
	if err != nil {
		t.Fatal(err)
	}
	readObject(t, c, l.Objects[0])
	for i := range 3 {
		info, err := c.Stat(ctx, fmt.Sprintf("unlisted/%d", i))
		if err != nil {
			t.Fatal(err)
		}
		readObject(t, c, info)
	}
	time.Sleep(100 * time.Millisecond)
	if n := c.Stats().PrefetchObjects; n != 0 {
		t.Fatalf("prefetched %d objects after one open of a listed directory and opens of an unlisted one", n)
	}
	readObject(t, c, l.Objects[1])
	waitFor(t, "prefetch of listed/", func() bool { return c.Stats().PrefetchObjects == 8 && prefetchIdle(c) })
}

// TestForegroundReadsDoNotQueueBehindPrefetches: while every prefetch GET
// hangs (more of them than MaxParallelFetches), a reader's miss still
// gets its GET at once: prefetches have fetch slots of their own.
func TestForegroundReadsDoNotQueueBehindPrefetches(t *testing.T) {
	opts := testOpts()
	opts.MaxParallelFetches = 2
	opts.PrefetchWorkers = 16
	c, fake, _ := newFixture(t, opts)
	ctx := context.Background()
	for i := range 40 {
		put(t, fake, fmt.Sprintf("d/%02d", i), randBytes(uint64(i), 4*kib))
	}
	other := put(t, fake, "other/x", randBytes(99, 4*kib))
	l, err := c.List(ctx, "d/")
	if err != nil {
		t.Fatal(err)
	}
	release := make(chan struct{})
	defer close(release)
	first, second := l.Objects[0].Key, l.Objects[1].Key
	fake.SetHook(func(ctx context.Context, op objstoretest.Op, key string) error {
		if op == objstoretest.OpRead && strings.HasPrefix(key, "d/") && key != first && key != second {
			select { // every prefetch GET hangs
			case <-release:
			case <-ctx.Done():
			}
		}
		return nil
	})
	readObject(t, c, l.Objects[0])
	readObject(t, c, l.Objects[1])
	waitFor(t, "prefetch GETs to hang", func() bool { return fake.Calls(objstoretest.OpRead) >= 2+int64(opts.PrefetchWorkers) })
	done := make(chan []byte, 1)
	go func() { done <- readObject(t, c, other) }()
	select {
	case b := <-done:
		if len(b) != 4*kib {
			t.Fatalf("read %d bytes", len(b))
		}
	case <-time.After(5 * time.Second):
		t.Fatal("a foreground read waited behind hanging prefetches")
	}
}

// TestWarmOpensDoNotPrefetch: opens of cached objects, as in a warm epoch
// after a reopen, do not start prefetching their directory.
func TestWarmOpensDoNotPrefetch(t *testing.T) {
	opts := testOpts()
	opts.Prefetch = false
	c, fake, dir := newFixture(t, opts)
	ctx := context.Background()
	for i := range 10 {
		put(t, fake, fmt.Sprintf("d/%d", i), randBytes(uint64(i), 4*kib))
	}
	l, err := c.List(ctx, "d/")
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range l.Objects {
		readObject(t, c, o)
	}
	waitQuiescent(t, c)
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	c = openTest(t, dir, fake, testOpts()) // prefetch on
	defer func() { _ = c.Close() }()
	if _, err := c.List(ctx, "d/"); err != nil {
		t.Fatal(err)
	}
	for _, o := range l.Objects[:4] {
		readObject(t, c, o)
	}
	c.prefetch.mu.Lock()
	dirs, queued := len(c.prefetch.dirs), len(c.prefetch.queue)
	c.prefetch.mu.Unlock()
	if dirs != 0 || queued != 0 {
		t.Errorf("warm opens: %d directories considered, %d objects queued for prefetch; want none", dirs, queued)
	}
}

package cache

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/basin-csi/basin/pkg/objstore"
	"github.com/basin-csi/basin/pkg/objstore/objstoretest"
	bolt "go.etcd.io/bbolt"
)

// TestAccessTimesWrittenAtTheirGrain checks the relatime rule of the
// periodic flush: an access that is all an object changed reaches the
// index only once it is atimeGrain newer than the indexed time, an object
// whose newer access is not due can still leave memory, and an explicit
// flush (Sync, Close) writes exact times.
func TestAccessTimesWrittenAtTheirGrain(t *testing.T) {
	const grain = time.Minute
	var now atomic.Int64
	now.Store(time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC).UnixNano())
	opts := testOpts()
	opts.Now = func() time.Time { return time.Unix(0, now.Load()) }
	c, fake, _ := newFixture(t, opts)
	info := put(t, fake, "o", randBytes(1, 64*kib))
	readAt := func(d time.Duration) int64 {
		t.Helper()
		at := now.Add(int64(d))
		readObject(t, c, info)
		return at
	}

	t0 := readAt(0)
	mustFlush(t, c)
	if got := indexedATime(t, c, "o"); got != t0 {
		t.Fatalf("after the first read and a flush: indexed access time %d, want %d", got, t0)
	}
	readAt(10 * time.Second)
	if err := c.flushGrain(grain); err != nil {
		t.Fatal(err)
	}
	if got := indexedATime(t, c, "o"); got != t0 {
		t.Errorf("an access 10s later was written by the periodic flush (grain %v)", grain)
	}
	c.mu.Lock()
	maxIdle := c.tune.maxIdle
	c.tune.maxIdle = 0
	c.mu.Unlock()
	c.trimIdle(int64(grain))
	c.mu.Lock()
	inMemory := c.objs["o"] != nil
	c.tune.maxIdle = maxIdle
	c.mu.Unlock()
	if inMemory {
		t.Error("an idle object whose only change is an access within the grain stayed in memory")
	}
	t2 := readAt(2 * time.Minute)
	if err := c.flushGrain(grain); err != nil {
		t.Fatal(err)
	}
	if got := indexedATime(t, c, "o"); got != t2 {
		t.Errorf("an access 2m later: indexed access time %d, want %d", got, t2)
	}
	t3 := readAt(time.Second)
	mustFlush(t, c)
	if got := indexedATime(t, c, "o"); got != t3 {
		t.Errorf("explicit flush: indexed access time %d, want the exact %d", got, t3)
	}
}

// indexedATime returns key's access time in the index (0: none).
func indexedATime(t *testing.T, c *Cache, key string) int64 {
	t.Helper()
	var at uint64
	if err := c.ix.view(func(tx *bolt.Tx) error {
		if raw := tx.Bucket(bucketATime).Get([]byte(key)); raw != nil {
			var err error
			at, err = getU64(raw)
			return err
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	return int64(at)
}

// TestWarmPassWritesNothing checks that re-reading cached objects, more of
// them than stay in memory, commits nothing to the index (no access time
// within the grain, no empty commit) and that each close trims the idle
// objects itself instead of waking the flusher to do it.
func TestWarmPassWritesNothing(t *testing.T) {
	tune := testTuning()
	tune.maxIdle = 2
	tune.flushInterval = time.Hour // only explicit flushes and kicks
	fake := objstoretest.NewFake()
	c, err := open(context.Background(), t.TempDir(), fake, testOpts(), tune)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = c.Close() }()
	var infos []objstore.ObjectInfo
	for i := range 6 {
		infos = append(infos, put(t, fake, fmt.Sprintf("o%d", i), randBytes(uint64(i), 64*kib)))
	}
	for _, info := range infos {
		readObject(t, c, info)
	}
	mustFlush(t, c)
	txBefore := lastTx(t, c)
	for _, info := range infos {
		readObject(t, c, info)
		c.mu.Lock()
		idle := c.idle.Len()
		c.mu.Unlock()
		if idle > tune.maxIdle {
			t.Fatalf("after closing %s: %d idle objects in memory, limit %d", info.Key, idle, tune.maxIdle)
		}
	}
	if err := c.flushGrain(tune.atimeGrain); err != nil {
		t.Fatal(err)
	}
	if tx := lastTx(t, c); tx != txBefore {
		t.Errorf("a warm pass committed %d index transactions", tx-txBefore)
	}
}

// lastTx is the id of the index's last committed transaction.
func lastTx(t *testing.T, c *Cache) int {
	t.Helper()
	var id int
	if err := c.ix.view(func(tx *bolt.Tx) error { id = tx.ID(); return nil }); err != nil {
		t.Fatal(err)
	}
	return id
}

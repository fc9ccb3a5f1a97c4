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
	c, fake, now := clockFixture(t)
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

// clockFixture is newFixture on a clock the test moves (unix ns).
func clockFixture(t *testing.T) (*Cache, *objstoretest.Fake, *atomic.Int64) {
	t.Helper()
	now := new(atomic.Int64)
	now.Store(time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC).UnixNano())
	opts := testOpts()
	opts.Now = func() time.Time { return time.Unix(0, now.Load()) }
	c, fake, _ := newFixture(t, opts)
	return c, fake, now
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

// TestPeriodicFlushFindsQueuedAccess checks the queue the periodic flush
// reads instead of every object in memory: an access that makes an idle
// object's access time due is written by the next periodic flush (and
// only once), and one that does not is left for a later due access or an
// exact flush.
func TestPeriodicFlushFindsQueuedAccess(t *testing.T) {
	const grain = time.Minute
	c, fake, now := clockFixture(t)
	// The default grain; set before Open it would race the flush loop.
	if c.tune.atimeGrain != grain {
		t.Fatalf("atimeGrain %v, want the default %v", c.tune.atimeGrain, grain)
	}
	var infos []objstore.ObjectInfo
	for i := range 3 {
		infos = append(infos, put(t, fake, fmt.Sprintf("o%d", i), randBytes(uint64(i), 16*kib)))
		readObject(t, c, infos[i])
	}
	mustFlush(t, c)
	if q := c.takeDueATimes(); len(q) != 0 {
		t.Fatalf("%d objects queued after an exact flush, want none", len(q))
	}
	now.Add(int64(10 * time.Second))
	readObject(t, c, infos[0]) // within the grain: not queued
	now.Add(int64(2 * time.Minute))
	readObject(t, c, infos[1]) // due
	t1 := now.Load()
	readObject(t, c, infos[1]) // queued once
	c.dueMu.Lock()
	queued := len(c.dueATimes)
	c.dueMu.Unlock()
	if queued != 1 {
		t.Errorf("%d objects queued, want 1 (o1, once)", queued)
	}
	before := indexedATime(t, c, "o0")
	if err := c.flushGrain(grain); err != nil {
		t.Fatal(err)
	}
	if got := indexedATime(t, c, "o1"); got != t1 {
		t.Errorf("o1's due access: indexed %d, want %d", got, t1)
	}
	if got := indexedATime(t, c, "o0"); got != before {
		t.Errorf("o0's access within the grain was written by the periodic flush")
	}
	txBefore := lastTx(t, c)
	if err := c.flushGrain(grain); err != nil {
		t.Fatal(err)
	}
	if tx := lastTx(t, c); tx != txBefore {
		t.Error("a second periodic flush with nothing due committed")
	}
}

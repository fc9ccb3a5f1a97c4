package cache

import (
	"bytes"
	"context"
	"fmt"
	"os/exec"
	"sync/atomic"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/basin-csi/basin/internal/testserver"
	"github.com/basin-csi/basin/pkg/objstore"
	"github.com/basin-csi/basin/pkg/objstore/objstoretest"
)

// fakeClock advances by a second on every reading, so access times are
// distinct and ordered.
type fakeClock struct{ ns atomic.Int64 }

func newFakeClock() *fakeClock {
	c := &fakeClock{}
	c.ns.Store(time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC).UnixNano())
	return c
}

func (c *fakeClock) Now() time.Time { return time.Unix(0, c.ns.Add(int64(time.Second))) }

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// cachedGETs reads info fully and returns how many GETs that took.
func cachedGETs(t *testing.T, c *Cache, fake *objstoretest.Fake, info objstore.ObjectInfo, want []byte) int64 {
	t.Helper()
	before := fake.Calls(objstoretest.OpRead)
	if got := readObject(t, c, info); !bytes.Equal(got, want) {
		t.Fatalf("%s: wrong bytes", info.Key)
	}
	return fake.Calls(objstoretest.OpRead) - before
}

func TestEvictionOrderAndWatermarks(t *testing.T) {
	opts := testOpts()
	opts.Now = newFakeClock().Now
	opts.CacheSize = 640 * kib // ten 64 KiB objects
	opts.HighWatermark = 0.8   // 512 KiB
	opts.LowWatermark = 0.5    // 320 KiB
	c, fake, _ := newFixture(t, opts)
	var infos []objstore.ObjectInfo
	var datas [][]byte
	for i := 0; i < 9; i++ {
		datas = append(datas, randBytes(uint64(100+i), 64*kib))
		infos = append(infos, put(t, fake, fmt.Sprintf("o%d", i), datas[i]))
	}
	for i := 0; i < 8; i++ { // 512 KiB: at, not above, the high watermark
		readObject(t, c, infos[i])
		mustFlush(t, c)
	}
	readObject(t, c, infos[0]) // o0 becomes the most recently used
	mustFlush(t, c)
	if c.Stats().Evictions != 0 {
		t.Fatalf("evicted at the high watermark: %+v", c.Stats())
	}
	readObject(t, c, infos[8]) // 576 KiB > high: evict down to low
	waitFor(t, "eviction", func() bool { return c.Stats().UsedBytes <= 320*kib })
	if used := c.Stats().UsedBytes; used < 256*kib {
		t.Errorf("evicted too much: used %d, low watermark 320 KiB", used)
	}
	// The four least recently used (o1..o4) are gone; o0 and o5..o8 stay.
	mustFlush(t, c)
	for i, want := range []bool{true, false, false, false, false, true, true, true, true} {
		if got := indexed(t, c, infos[i].Key); got != want {
			t.Errorf("o%d: cached = %v after eviction, want %v", i, got, want)
		}
	}
	// Evicted objects read correctly from the bucket again.
	if got := cachedGETs(t, c, fake, infos[1], datas[1]); got != 1 {
		t.Errorf("evicted o1: %d GETs, want 1", got)
	}
}

// indexed reports whether key has an object record.
func indexed(t *testing.T, c *Cache, key string) bool {
	t.Helper()
	found := false
	if err := c.ix.view(func(tx *bolt.Tx) error {
		found = tx.Bucket(bucketObjects).Get([]byte(key)) != nil
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	return found
}

func TestPinnedObjectsAreNotEvicted(t *testing.T) {
	opts := testOpts()
	opts.Now = newFakeClock().Now
	opts.CacheSize = 256 * kib
	c, fake, _ := newFixture(t, opts)
	a, b := randBytes(200, 100*kib), randBytes(201, 100*kib)
	ia, ib := put(t, fake, "a", a), put(t, fake, "b", b)
	ha, hb := openObj(t, c, ia), openObj(t, c, ib)
	readAll(t, ha, 64*kib)
	readAll(t, hb, 64*kib)
	// A read returns before its blocks are written (behind it): until
	// they are, the reads below could take the room they need.
	waitReady(t, ha)
	waitReady(t, hb)
	mustFlush(t, c)
	// More data than fits while a and b are pinned: the rest is served
	// from the bucket, never by evicting a or b.
	for i := 0; i < 6; i++ {
		d := randBytes(uint64(210+i), 100*kib)
		info := put(t, fake, fmt.Sprintf("x%d", i), d)
		if got := readObject(t, c, info); !bytes.Equal(got, d) {
			t.Fatalf("x%d: wrong bytes", i)
		}
		if used := c.Stats().UsedBytes; used > opts.CacheSize {
			t.Fatalf("used %d above capacity %d", used, opts.CacheSize)
		}
	}
	waitQuiescent(t, c) // a fetch the last read started may still be running: its GET is not a's or b's
	before := fake.Calls(objstoretest.OpRead)
	if !bytes.Equal(readAll(t, ha, 64*kib), a) || !bytes.Equal(readAll(t, hb, 64*kib), b) {
		t.Fatal("pinned objects: wrong bytes")
	}
	if n := fake.Calls(objstoretest.OpRead) - before; n != 0 {
		t.Errorf("pinned objects were evicted: %d GETs", n)
	}
	_ = ha.Close()
	_ = hb.Close()
}

func TestUncachedWhenFull(t *testing.T) {
	opts := testOpts()
	opts.CacheSize = 64 * kib // one block
	c, fake, _ := newFixture(t, opts)
	pin := randBytes(300, 60*kib)
	hp := openObj(t, c, put(t, fake, "pin", pin))
	defer func() { _ = hp.Close() }()
	readAll(t, hp, 64*kib)
	d := randBytes(301, 500*kib)
	info := put(t, fake, "big", d)
	for round := 0; round < 2; round++ {
		before := fake.Calls(objstoretest.OpRead)
		if got := readObject(t, c, info); !bytes.Equal(got, d) {
			t.Fatalf("round %d: wrong bytes from an uncacheable object", round)
		}
		if fake.Calls(objstoretest.OpRead) == before {
			t.Fatalf("round %d: no GET although nothing could be cached", round)
		}
	}
	if used := c.Stats().UsedBytes; used > opts.CacheSize {
		t.Errorf("used %d above capacity %d", used, opts.CacheSize)
	}
}

// mountTmpfs mounts a small tmpfs (root only) for disk-full tests.
func mountTmpfs(t *testing.T, size string) string {
	t.Helper()
	testserver.RequireRoot(t, "mounting a tmpfs")
	dir := t.TempDir()
	if out, err := exec.Command("mount", "-t", "tmpfs", "-o", "size="+size+",mode=0700", "tmpfs", dir).CombinedOutput(); err != nil {
		testserver.Unavailable(t, "cannot mount tmpfs: %v: %s", err, out)
	}
	t.Cleanup(func() { _ = exec.Command("umount", "-l", dir).Run() })
	return dir
}

func TestDiskFull(t *testing.T) {
	tests := []struct {
		name         string
		minFreeRatio float64
	}{
		{"ENOSPC", -1},            // no floor: writes hit a full disk
		{"free-space floor", 0.5}, // the floor keeps half the disk free
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := mountTmpfs(t, "4m")
			fake := objstoretest.NewFake()
			opts := testOpts()
			opts.MinFreeRatio = tt.minFreeRatio
			c := openTest(t, dir+"/cache", fake, opts)
			defer func() { _ = c.Close() }()
			var infos []objstore.ObjectInfo
			var datas [][]byte
			for j := 0; j < 12; j++ { // 12 × 600 KiB on a 4 MiB disk
				datas = append(datas, randBytes(uint64(400+10*i+j), 600*kib))
				infos = append(infos, put(t, fake, fmt.Sprintf("f%d", j), datas[j]))
			}
			for round := 0; round < 2; round++ {
				for j := range infos {
					if got := readObject(t, c, infos[j]); !bytes.Equal(got, datas[j]) {
						t.Fatalf("round %d f%d: wrong bytes on a full disk", round, j)
					}
				}
			}
			if tt.minFreeRatio > 0 {
				if r := c.disk.freeRatio(0); r < tt.minFreeRatio-0.1 {
					t.Errorf("free ratio %.2f, floor %.2f", r, tt.minFreeRatio)
				}
			}
			if _, err := c.Verify(context.Background()); err != nil {
				t.Errorf("verify: %v", err)
			}
		})
	}
}

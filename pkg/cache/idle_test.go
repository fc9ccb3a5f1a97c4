package cache

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"syscall"
	"testing"

	"github.com/basin-csi/basin/pkg/objstore"
	"github.com/basin-csi/basin/pkg/objstore/objstoretest"
)

// openFDs counts this process's open descriptors.
func openFDs(t *testing.T) int {
	t.Helper()
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Fatal(err)
	}
	return len(ents)
}

// lowerNoFile sets the soft RLIMIT_NOFILE to n for the rest of the test.
func lowerNoFile(t *testing.T, n uint64) {
	t.Helper()
	var old syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &old); err != nil {
		t.Fatal(err)
	}
	lim := old
	lim.Cur = n
	if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = syscall.Setrlimit(syscall.RLIMIT_NOFILE, &old) })
}

// idleCounts reports the idle tier's lists and the objects in memory.
func idleCounts(c *Cache) (objs, idle, idleFiles int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.objs), c.idle.Len(), c.idleFiles.Len()
}

// TestIdleTierManyObjectsFewDescriptors: 6,000 objects (more than the
// 4,096 kept in memory before the idle tier, and six times the descriptor
// limit of 1,024) are fetched in turn, then opened in turn again. They all
// stay in memory (the second pass reads no index and verifies nothing)
// while the idle objects hold at most a quarter of the limit in
// descriptors.
func TestIdleTierManyObjectsFewDescriptors(t *testing.T) {
	const n = 6000
	lowerNoFile(t, 1024)
	c, fake, _ := newFixture(t, testOpts())
	c.mu.Lock()
	bound := c.tune.maxIdleFiles
	c.mu.Unlock()
	if bound != 256 {
		t.Fatalf("descriptor bound %d under RLIMIT_NOFILE 1024, want 256", bound)
	}
	infos := make([]objstore.ObjectInfo, n)
	for i := range infos {
		infos[i] = put(t, fake, fmt.Sprintf("d%02d/f%05d", i%50, i), []byte(fmt.Sprintf("object %d", i)))
	}
	check := func(pass int) {
		for i, info := range infos {
			h := openObj(t, c, info)
			f, ok := h.LocalFile()
			if !ok {
				t.Fatalf("pass %d: %s has no local file", pass, info.Key)
			}
			got := make([]byte, info.Size)
			if _, err := f.ReadAt(got, 0); err != nil || string(got) != fmt.Sprintf("object %d", i) {
				t.Fatalf("pass %d: %s reads %q, %v", pass, info.Key, got, err)
			}
			_ = h.Close()
			if i%1000 == 999 {
				if _, _, files := idleCounts(c); files > bound {
					t.Fatalf("pass %d: %d idle objects hold their descriptor, bound %d", pass, files, bound)
				}
			}
		}
	}
	for i, info := range infos {
		readObject(t, c, info)
		// Objects with data not synced yet keep their descriptor until
		// the flusher has synced it: the bound holds after a flush, and
		// the limit always.
		if i%1000 == 999 {
			if fds := openFDs(t); fds >= 1024 {
				t.Fatalf("pass 1: %d descriptors open", fds)
			}
		}
	}
	mustFlush(t, c)
	if _, _, files := idleCounts(c); files > bound {
		t.Fatalf("after pass 1 and a flush: %d idle objects hold their descriptor, bound %d", files, bound)
	}
	before := c.stats.verifyBufs.peak.Load()
	fake.ResetCounters()
	check(2)
	objs, idle, files := idleCounts(c)
	if objs != n || idle != n {
		t.Errorf("after two passes: %d objects in memory, %d idle; want %d", objs, idle, n)
	}
	if files > bound {
		t.Errorf("%d idle objects hold their descriptor, bound %d", files, bound)
	}
	if fds := openFDs(t); fds > 1024 {
		t.Errorf("%d descriptors open", fds)
	}
	if peak := c.stats.verifyBufs.peak.Load(); peak != before {
		t.Errorf("the second pass verified blocks (peak buffers %d → %d): objects left memory", before, peak)
	}
	if r := fake.Calls(objstoretest.OpRead); r != 0 {
		t.Errorf("%d GETs in the second pass", r)
	}
}

// closeIdleFiles closes the descriptors of every idle object, as a pass
// over more than tuning.maxIdleFiles objects does.
func closeIdleFiles(t *testing.T, c *Cache) {
	t.Helper()
	mustFlush(t, c)
	c.mu.Lock()
	defer c.mu.Unlock()
	bound := c.tune.maxIdleFiles
	c.tune.maxIdleFiles = 0
	c.closeIdleFilesLocked(c.idleFiles.Len())
	c.tune.maxIdleFiles = bound
	if n := c.idleFiles.Len(); n != 0 {
		t.Fatalf("fixture: %d idle objects keep their descriptor", n)
	}
}

// TestIdleTierSeesEvictionAndInstall: an idle object whose descriptor was
// closed is evicted, replaced by an install, or loses its data file behind
// the cache's back; the next open serves the right bytes each time and
// the cache stays consistent.
func TestIdleTierSeesEvictionAndInstall(t *testing.T) {
	ctx := context.Background()
	c, fake, _ := newFixture(t, testOpts())
	v1 := randBytes(70, 100*kib)
	info := put(t, fake, "obj", v1)
	other := put(t, fake, "other", randBytes(71, 10*kib))
	readObject(t, c, info)
	readObject(t, c, other)

	// Evicted while its descriptor is closed: the next open fetches.
	closeIdleFiles(t, c)
	if _, err := c.GC(0); err != nil {
		t.Fatal(err)
	}
	if objs, _, _ := idleCounts(c); objs != 0 {
		t.Fatalf("%d objects in memory after evicting everything", objs)
	}
	fake.ResetCounters()
	if got := readObject(t, c, info); !bytes.Equal(got, v1) {
		t.Fatal("wrong bytes after eviction")
	}
	if r := fake.Calls(objstoretest.OpRead); r == 0 {
		t.Error("an evicted object was served without a GET")
	}
	if _, err := c.Verify(ctx); err != nil {
		t.Fatalf("verify after eviction: %v", err)
	}

	// Replaced by an install while its descriptor is closed.
	closeIdleFiles(t, c)
	v2 := randBytes(72, 90*kib)
	info2, staged := stage(t, c, fake, "obj", v2)
	if err := c.Install(ctx, info2, staged); err != nil {
		t.Fatal(err)
	}
	fake.ResetCounters()
	if got := readObject(t, c, info2); !bytes.Equal(got, v2) {
		t.Fatal("wrong bytes after the install")
	}
	if r := fake.Calls(objstoretest.OpRead); r != 0 {
		t.Errorf("%d GETs for an installed object", r)
	}
	mustFlush(t, c)
	if _, err := c.Verify(ctx); err != nil {
		t.Fatalf("verify after the install: %v", err)
	}

	// Its data file removed behind the cache's back: refetched.
	closeIdleFiles(t, c)
	c.mu.Lock()
	path := c.objs["obj"].path
	c.mu.Unlock()
	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
	fake.ResetCounters()
	if got := readObject(t, c, info2); !bytes.Equal(got, v2) {
		t.Fatal("wrong bytes after the data file went")
	}
	if r := fake.Calls(objstoretest.OpRead); r == 0 {
		t.Error("an object whose data file went was served without a GET")
	}
	waitQuiescent(t, c)
	mustFlush(t, c)
	if _, err := c.Verify(ctx); err != nil {
		t.Fatalf("verify after the data file went: %v", err)
	}
}

func TestMaxIdleFilesFor(t *testing.T) {
	for _, tc := range []struct {
		want   int
		nofile uint64
		out    int
	}{
		{4096, 0, 4096},
		{4096, 1 << 20, 4096},
		{8192, 20000, 5000},
		{4096, 1024, 256},
	} {
		if got := maxIdleFilesFor(tc.want, tc.nofile); got != tc.out {
			t.Errorf("maxIdleFilesFor(%d, %d) = %d, want %d", tc.want, tc.nofile, got, tc.out)
		}
	}
}

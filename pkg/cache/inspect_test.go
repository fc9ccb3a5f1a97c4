package cache

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"testing"

	bolt "go.etcd.io/bbolt"

	"github.com/basin-csi/basin/internal/cacheusage"
	"github.com/basin-csi/basin/pkg/objstore/objstoretest"
)

// fillInspect caches objects "a/0".."a/3" and "b/0" of growing sizes, read
// in that order (so "a/0" is the oldest), plus the first block of a large
// "big" read last.
func fillInspect(t *testing.T, c *Cache, fake *objstoretest.Fake) {
	t.Helper()
	keys := []string{"a/0", "a/1", "a/2", "a/3", "b/0"}
	for i, k := range keys {
		readObject(t, c, put(t, fake, k, randBytes(uint64(500+i), (i+1)*50*kib)))
		mustFlush(t, c)
	}
	big := put(t, fake, "big", randBytes(599, 1*mib))
	h := openObj(t, c, big)
	buf := make([]byte, 10*kib)
	if _, err := h.ReadAt(context.Background(), buf, 0); err != nil {
		t.Fatal(err)
	}
	_ = h.Close()
	mustFlush(t, c)
}

func entryKeys(es []Entry) []string {
	var out []string
	for _, e := range es {
		out = append(out, e.Key)
	}
	return out
}

func TestEntries(t *testing.T) {
	opts := testOpts()
	opts.Now = newFakeClock().Now
	c, fake, _ := newFixture(t, opts)
	fillInspect(t, c, fake)
	tests := []struct {
		name string
		q    EntryQuery
		want []string
	}{
		{"oldest, all", EntryQuery{Order: OldestFirst}, []string{"a/0", "a/1", "a/2", "a/3", "b/0", "big"}},
		{"oldest, limit", EntryQuery{Order: OldestFirst, Limit: 2}, []string{"a/0", "a/1"}},
		{"oldest, prefix", EntryQuery{Order: OldestFirst, Prefix: "b/"}, []string{"b/0"}},
		{"largest, limit", EntryQuery{Order: LargestFirst, Limit: 3}, []string{"b/0", "a/3", "a/2"}},
		{"largest, prefix", EntryQuery{Order: LargestFirst, Prefix: "a/"}, []string{"a/3", "a/2", "a/1", "a/0"}},
		{"nothing matches", EntryQuery{Order: LargestFirst, Prefix: "zzz"}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := c.Entries(context.Background(), tt.q)
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(entryKeys(got), tt.want) {
				t.Errorf("keys = %q, want %q", entryKeys(got), tt.want)
			}
		})
	}
	all, err := c.Entries(context.Background(), EntryQuery{Order: OldestFirst})
	if err != nil {
		t.Fatal(err)
	}
	for i, e := range all {
		if e.LastAccess.IsZero() || (i > 0 && e.LastAccess.Before(all[i-1].LastAccess)) {
			t.Errorf("%s: last access %v out of order", e.Key, e.LastAccess)
		}
		if e.Alloc <= 0 || e.BlockSize != opts.CacheBlockSize {
			t.Errorf("%s: alloc %d, block size %d", e.Key, e.Alloc, e.BlockSize)
		}
		want := e.Blocks
		if e.Key == "big" {
			want = 1 // only the block read
		}
		if e.PresentBlocks != want {
			t.Errorf("%s: %d of %d blocks present, want %d", e.Key, e.PresentBlocks, e.Blocks, want)
		}
	}
	if _, err := c.Entries(context.Background(), EntryQuery{Order: 7}); !errors.Is(err, ErrInvalidArgument) {
		t.Errorf("bad order: %v, want ErrInvalidArgument", err)
	}
}

// TestEntriesBatches lists more records than one read transaction scans.
func TestEntriesBatches(t *testing.T) {
	c, _, _ := newFixture(t, testOpts())
	n := entryBatch + 50
	// Records written directly keep the test fast.
	if err := c.ix.update(func(tx *bolt.Tx) error {
		for i := 0; i < n; i++ {
			key := fmt.Sprintf("k%05d", i)
			rec := &objRecord{Version: "v", Size: 4096, BlockSize: 64 * kib, Alloc: 4096, Present: []uint64{1}, CRCs: []uint32{0}}
			if err := putObject(tx, key, rec); err != nil {
				return err
			}
			if err := setATime(tx, key, int64(i+1)); err != nil {
				return err
			}
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	for _, order := range []EntryOrder{OldestFirst, LargestFirst} {
		got, err := c.Entries(context.Background(), EntryQuery{Order: order})
		if err != nil {
			t.Fatal(err)
		}
		if len(got) != n {
			t.Errorf("order %d: %d entries, want %d", order, len(got), n)
		}
	}
	got, _ := c.Entries(context.Background(), EntryQuery{Order: OldestFirst, Limit: entryBatch + 10})
	if len(got) != entryBatch+10 || got[entryBatch].Key != fmt.Sprintf("k%05d", entryBatch) {
		t.Errorf("limit across batches: %d entries", len(got))
	}
	// The records have no data files: drop them again for the cleanup's
	// Verify.
	if err := c.ix.update(func(tx *bolt.Tx) error {
		for i := 0; i < n; i++ {
			if err := deleteObject(tx, fmt.Sprintf("k%05d", i)); err != nil {
				return err
			}
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
}

func TestPinnedObjectsCount(t *testing.T) {
	c, fake, _ := newFixture(t, testOpts())
	ia := put(t, fake, "a", randBytes(1, 10*kib))
	ib := put(t, fake, "b", randBytes(2, 10*kib))
	readObject(t, c, ib)
	if n := c.PinnedObjects(); n != 0 {
		t.Errorf("pinned = %d with no open handle", n)
	}
	h := openObj(t, c, ia)
	if n := c.PinnedObjects(); n != 1 {
		t.Errorf("pinned = %d with one open handle", n)
	}
	_ = h.Close()
	if n := c.PinnedObjects(); n != 0 {
		t.Errorf("pinned = %d after close", n)
	}
}

func TestGC(t *testing.T) {
	opts := testOpts()
	opts.Now = newFakeClock().Now
	opts.CacheSize = 10 * mib
	c, fake, _ := newFixture(t, opts)
	fillInspect(t, c, fake)
	before := c.Stats().UsedBytes
	res, err := c.GC(300 * kib)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("gc: %+v", res)
	if res.Before != before || res.After > 300*kib || res.After != c.Stats().UsedBytes || res.Evicted == 0 {
		t.Errorf("GC(300 KiB) = %+v (used before %d)", res, before)
	}
	// The least recently used went first.
	left, _ := c.Entries(context.Background(), EntryQuery{Order: OldestFirst})
	if keys := entryKeys(left); len(keys) == 0 || keys[len(keys)-1] != "big" || slices.Contains(keys, "a/0") {
		t.Errorf("left after GC: %q", keys)
	}
	// Default target: the low watermark of the capacity, already met.
	if res, err := c.GC(-1); err != nil || res.Target != int64(0.85*float64(10*mib)) || res.Evicted != 0 {
		t.Errorf("GC(-1) = %+v, %v", res, err)
	}

	nocap, fake2, _ := newFixture(t, testOpts())
	readObject(t, nocap, put(t, fake2, "x", randBytes(3, 10*kib)))
	if _, err := nocap.GC(-1); !errors.Is(err, ErrInvalidArgument) {
		t.Errorf("GC(-1) without capacity: %v, want ErrInvalidArgument", err)
	}
}

// corruptDataFile flips bytes in the middle of the first data file found.
func corruptDataFile(t *testing.T, dir string) string {
	t.Helper()
	var path string
	_ = filepath.WalkDir(filepath.Join(dir, dataDirName), func(p string, d fs.DirEntry, err error) error {
		if err == nil && d.Type().IsRegular() && path == "" {
			if fi, _ := d.Info(); fi != nil && fi.Size() > 0 {
				path = p
			}
		}
		return nil
	})
	if path == "" {
		t.Fatal("no data file")
	}
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = f.Close() }()
	b := make([]byte, 16)
	if _, err := f.ReadAt(b, 100); err != nil {
		t.Fatal(err)
	}
	for i := range b {
		b[i] ^= 0xff
	}
	if _, err := f.WriteAt(b, 100); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestOffline(t *testing.T) {
	opts := testOpts()
	opts.CacheSize = 10 * mib
	fake := objstoretest.NewFake()
	dir := t.TempDir()
	c := openTest(t, dir, fake, opts)
	fillInspect(t, c, fake)
	used := c.Stats().UsedBytes
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	published, err := cacheusage.Read(dir)
	if err != nil || published.VolumeID != opts.VolumeID || published.UsedBytes != used || published.Capacity != 10*mib || published.LastAccess().IsZero() {
		t.Fatalf("usage after close: %+v, %v", published, err)
	}
	if !IsCacheDir(dir) || IsCacheDir(t.TempDir()) || InUse(dir) {
		t.Errorf("IsCacheDir / InUse wrong on a closed cache")
	}
	off, err := OpenOffline(context.Background(), dir)
	if err != nil {
		t.Fatal(err)
	}
	if !InUse(dir) {
		t.Error("InUse false while opened offline")
	}
	if off.VolumeID() != opts.VolumeID {
		t.Errorf("volume id %q, want %q", off.VolumeID(), opts.VolumeID)
	}
	if st := off.Stats(); st.UsedBytes != used || st.Capacity != 10*mib || st.Objects != 6 {
		t.Errorf("offline stats %+v, want used %d, capacity 10 MiB, 6 objects", st, used)
	}
	if es, err := off.Entries(context.Background(), EntryQuery{Order: LargestFirst, Limit: 1}); err != nil || len(es) != 1 || es[0].Key != "b/0" {
		t.Errorf("largest: %+v, %v", es, err)
	}
	// A second opener (a mount) is locked out meanwhile.
	if _, err := OpenOffline(context.Background(), dir); !errors.Is(err, ErrLocked) {
		t.Errorf("second open: %v, want ErrLocked", err)
	}
	if rep, err := off.Verify(context.Background()); err != nil {
		t.Errorf("verify of a sound cache: %v %q", err, rep.Problems)
	}
	corruptDataFile(t, dir)
	rep, err := off.Verify(context.Background())
	if !errors.Is(err, ErrInconsistent) || len(rep.Problems) == 0 {
		t.Errorf("verify of a corrupted cache: %v %q, want ErrInconsistent", err, rep.Problems)
	}
	t.Logf("problems: %q", rep.Problems)
	// GC towards a lowered capacity: below its low watermark.
	res, err := off.GC(-1, 200*kib)
	if err != nil || res.After > 170*kib || res.Evicted == 0 {
		t.Errorf("GC to a 200 KiB capacity: %+v, %v", res, err)
	}
	if err := off.Close(); err != nil {
		t.Fatal(err)
	}
	after, err := cacheusage.Read(dir)
	if err != nil || after.Capacity != published.Capacity || after.LastAccessNano != published.LastAccessNano || after.UsedBytes != res.After {
		t.Errorf("usage after offline close: %+v, want capacity and last access of %+v, used %d", after, published, res.After)
	}

	if _, err := OpenOffline(context.Background(), t.TempDir()); !errors.Is(err, ErrInvalidArgument) {
		t.Errorf("empty directory: %v, want ErrInvalidArgument", err)
	}
}

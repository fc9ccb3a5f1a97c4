package fuse

import (
	"fmt"
	"github.com/basin-csi/basin/pkg/mountspec"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/basin-csi/basin/pkg/objstore/objstoretest"
)

// TestOpeningByNameListsOnce: a reader that opens 40 files of a directory
// by name, in no particular order and without listing it, costs one
// listing of the directory and no HEAD per file (nor for the directory:
// the root's listing shows it is one, within the negative TTL).
func TestOpeningByNameListsOnce(t *testing.T) {
	store := objstoretest.NewFake()
	for i := range 40 {
		put(t, store, fmt.Sprintf("train/%02d.jpg", i), []byte(fmt.Sprintf("image %d", i)))
	}
	tm := mountStore(t, store, mountSpec{cache: realCache, cfg: Config{Spec: mountspec.Spec{MetadataTTL: time.Minute, NegativeMetadataTTL: 5 * time.Second}}})
	before := store.Calls(objstoretest.OpStat)
	for _, i := range []int{17, 3, 39, 0, 25, 8, 31, 12} {
		b, err := os.ReadFile(filepath.Join(tm.dir, "train", fmt.Sprintf("%02d.jpg", i)))
		if err != nil || string(b) != fmt.Sprintf("image %d", i) {
			t.Fatalf("file %d: %q %v", i, b, err)
		}
	}
	if n := store.Calls(objstoretest.OpStat) - before; n != 0 {
		t.Errorf("%d HEADs for 8 files of a primed directory, want 0", n)
	}
	if n := store.Calls(objstoretest.OpList); n > 3 {
		t.Errorf("%d listings, want the root's and the directory's (at most 3)", n)
	}
}

// TestCreatingFilesCostsTheirUploadOnly: `mkdir -p` of a new tree and
// files created in it, and files created in a directory whose fresh
// listing the mount holds, send one PUT each and no HEAD or LIST — also
// once the negative TTL has passed in a directory the mount made itself.
// A file created over an object the listing shows keeps the O_EXCL
// promise without a request either.
//
// The cache's clock is the test's: the files in data/ must be created
// within the negative TTL of its listing however slowly the machine runs,
// and "late" after it.
func TestCreatingFilesCostsTheirUploadOnly(t *testing.T) {
	store := objstoretest.NewFake()
	put(t, store, "data/old.bin", []byte("old"))
	clk := newHandClock()
	tm := mountStore(t, store, mountSpec{cache: realCache, now: clk.Now, cfg: Config{Spec: mountspec.Spec{MetadataTTL: time.Minute, NegativeMetadataTTL: 2 * time.Second}}})
	if _, err := os.ReadDir(filepath.Join(tm.dir, "data")); err != nil {
		t.Fatal(err)
	}
	heads, lists, puts := store.Calls(objstoretest.OpStat), store.Calls(objstoretest.OpList), store.Calls(objstoretest.OpPut)
	if err := os.MkdirAll(filepath.Join(tm.dir, "data", "new", "a", "b"), 0o755); err != nil {
		t.Fatal(err)
	}
	write := func(rel, content string) {
		t.Helper()
		if err := os.WriteFile(filepath.Join(tm.dir, rel), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for i := range 5 {
		write(fmt.Sprintf("data/new/a/b/f%d", i), "x")
		write(fmt.Sprintf("data/g%d", i), "y")
	}
	clk.Advance(2200 * time.Millisecond) // past the negative TTL
	write("data/new/a/b/late", "z")
	if f, err := os.OpenFile(filepath.Join(tm.dir, "data", "old.bin"), os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644); err == nil {
		_ = f.Close()
		t.Error("O_EXCL over an existing object succeeded")
	}
	if n := store.Calls(objstoretest.OpStat) - heads; n != 0 {
		t.Errorf("%d HEADs, want 0", n)
	}
	if n := store.Calls(objstoretest.OpList) - lists; n != 0 {
		t.Errorf("%d LISTs, want 0", n)
	}
	if n := store.Calls(objstoretest.OpPut) - puts; n != 3+11 {
		t.Errorf("%d PUTs, want 14 (3 directory markers, 11 files)", n)
	}
	// Everything written is listed, by this mount and in the bucket.
	entries, err := os.ReadDir(filepath.Join(tm.dir, "data", "new", "a", "b"))
	if err != nil || len(entries) != 6 {
		t.Errorf("new/a/b lists %d entries (%v), want 6", len(entries), err)
	}
}

// handClock is a clock that moves only when the test advances it.
type handClock struct{ ns atomic.Int64 }

func newHandClock() *handClock {
	c := &handClock{}
	c.ns.Store(time.Now().UnixNano())
	return c
}

func (c *handClock) Now() time.Time { return time.Unix(0, c.ns.Load()) }

func (c *handClock) Advance(d time.Duration) { c.ns.Add(int64(d)) }

package cache

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/basin-csi/basin/pkg/objstore"
	"github.com/basin-csi/basin/pkg/objstore/objstoretest"
)

func TestPrimeAnswersStatsWithOneListing(t *testing.T) {
	ctx := context.Background()
	clock := &steppedClock{t: time.Unix(1e9, 0)}
	opts := testOpts()
	opts.MetadataTTL, opts.NegativeMetadataTTL, opts.Now = time.Hour, 5*time.Second, clock.Now
	c, fake, _ := newFixture(t, opts)
	for i := range 50 {
		put(t, fake, fmt.Sprintf("train/%03d.jpg", i), []byte("x"))
	}
	put(t, fake, "train/sub/deep.jpg", []byte("y"))

	if err := c.Prime(ctx, "train/"); err != nil {
		t.Fatal(err)
	}
	if err := c.Prime(ctx, "train/"); err != nil { // primed: no request
		t.Fatal(err)
	}
	lists := fake.Calls(objstoretest.OpList)
	for i := range 50 {
		if info, err := c.Stat(ctx, fmt.Sprintf("train/%03d.jpg", i)); err != nil || info.Size != 1 {
			t.Fatalf("stat %d: %+v %v", i, info, err)
		}
	}
	// An absent name and a directory name are answered from the listing.
	for _, k := range []string{"train/missing.jpg", "train/sub"} {
		if _, err := c.Stat(ctx, k); !errors.Is(err, objstore.ErrNotFound) {
			t.Errorf("stat %s: %v, want ErrNotFound", k, err)
		}
	}
	if n := fake.Calls(objstoretest.OpStat); n != 0 {
		t.Errorf("%d HEADs after priming, want 0", n)
	}
	if lists != 1 || fake.Calls(objstoretest.OpList) != 1 {
		t.Errorf("%d listings (%d at priming), want 1", fake.Calls(objstoretest.OpList), lists)
	}
	// Absence holds only for the negative TTL: then a new object shows.
	put(t, fake, "train/missing.jpg", []byte("z"))
	clock.t = clock.t.Add(6 * time.Second)
	if _, err := c.Stat(ctx, "train/missing.jpg"); err != nil {
		t.Errorf("new object after the negative TTL: %v", err)
	}
}

func TestPrimeOfALargeDirectoryKeepsItsFirstPage(t *testing.T) {
	ctx := context.Background()
	c, fake, _ := newFixture(t, testOpts())
	for i := range primePageKeys + 10 {
		put(t, fake, fmt.Sprintf("big/%05d", i), []byte("x"))
	}
	if err := c.Prime(ctx, "big/"); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Stat(ctx, "big/00000"); err != nil {
		t.Fatal(err)
	}
	if n := fake.Calls(objstoretest.OpStat); n != 0 {
		t.Errorf("a key of the first page cost %d HEADs", n)
	}
	// Past the page nothing is known: no false absence, a HEAD instead.
	if _, err := c.Stat(ctx, fmt.Sprintf("big/%05d", primePageKeys+5)); err != nil {
		t.Errorf("a key past the first page: %v", err)
	}
	if n := fake.Calls(objstoretest.OpStat); n != 1 {
		t.Errorf("%d HEADs for a key past the first page, want 1", n)
	}
	if err := c.Prime(ctx, "big/"); err != nil || fake.Calls(objstoretest.OpList) != 1 {
		t.Errorf("a primed directory was listed again (%d listings, %v)", fake.Calls(objstoretest.OpList), err)
	}
}

func TestPrimeWithoutAttributeCaching(t *testing.T) {
	opts := testOpts()
	opts.MetadataTTL = 0
	c, fake, _ := newFixture(t, opts)
	if err := c.Prime(context.Background(), "x/"); err != nil || fake.Calls(objstoretest.OpList) != 0 {
		t.Errorf("Prime with attribute caching off listed %d times (%v)", fake.Calls(objstoretest.OpList), err)
	}
	if err := c.Prime(context.Background(), "x"); err == nil {
		t.Error("no error for a prefix without its slash")
	}
}

// TestPrimeNumbersTheListedPaths: after Prime, every listed file and
// directory has its inode number committed in the index, so the lookups
// that follow find theirs without a commit of their own; the numbers are
// distinct and stay what InodeOf returns.
func TestPrimeNumbersTheListedPaths(t *testing.T) {
	ctx := context.Background()
	opts := testOpts()
	opts.MetadataTTL = time.Hour
	c, fake, _ := newFixture(t, opts)
	paths := []string{"train/a.jpg", "train/b.jpg", "train/sub"}
	put(t, fake, "train/a.jpg", []byte("x"))
	put(t, fake, "train/b.jpg", []byte("y"))
	put(t, fake, "train/sub/deep.jpg", []byte("z"))

	if err := c.Prime(ctx, "train/"); err != nil {
		t.Fatal(err)
	}
	inos := make([]uint64, len(paths))
	if missing, err := c.lookupInodes(paths, inos); err != nil || missing != 0 {
		t.Fatalf("committed numbers after Prime: %v missing %d, %v; want all", inos, missing, err)
	}
	seen := map[uint64]bool{}
	for i, p := range paths {
		got, err := c.InodeOf(p)
		if err != nil || got != inos[i] || seen[got] || got == rootIno {
			t.Errorf("InodeOf(%q) = %d, %v; want the committed %d, distinct", p, got, err, inos[i])
		}
		seen[got] = true
	}
	if n, err := c.InodeOf("train/sub/deep.jpg"); err != nil || seen[n] {
		t.Errorf("InodeOf of an unlisted path = %d, %v; want a new number", n, err)
	}
}

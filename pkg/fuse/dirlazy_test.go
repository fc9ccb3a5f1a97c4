package fuse

import (
	"slices"
	"testing"
	"time"
)

// TestOpendirServedByTheKernelResolvesNothing: the first listing of a
// directory numbers its entries; a second opendir, whose listing is
// unchanged, lets the kernel answer from its readdir cache and asks the
// cache for no inode numbers (a warm walk reads no index record of the
// entries).
func TestOpendirServedByTheKernelResolvesNothing(t *testing.T) {
	store := newMinIOStore(t, nil)
	for _, k := range []string{"d/a", "d/b", "d/c"} {
		put(t, store, k, []byte(k))
	}
	var cfg Config
	cfg.MetadataTTL, cfg.NegativeMetadataTTL = time.Hour, time.Hour
	m := mountStore(t, store, mountSpec{cfg: cfg, cache: fakeLocal})
	fc := m.cache.(*fakeCache)
	before := fc.inodeBatches.Load()
	if got := names(t, path(m, "d")); !slices.Equal(got, []string{"a", "b", "c"}) {
		t.Fatalf("first listing %v", got)
	}
	first := fc.inodeBatches.Load()
	if first == before {
		t.Fatal("the first listing asked for no inode numbers")
	}
	if got := names(t, path(m, "d")); !slices.Equal(got, []string{"a", "b", "c"}) {
		t.Fatalf("second listing %v", got)
	}
	if n := fc.inodeBatches.Load() - first; n != 0 {
		t.Errorf("the listing served by the kernel's readdir cache asked for inode numbers %d times", n)
	}
}

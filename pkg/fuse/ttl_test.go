package fuse

import (
	"github.com/basin-csi/basin/pkg/mountspec"
	"os"
	"slices"
	"testing"
	"time"

	"github.com/basin-csi/basin/pkg/objstore"
)

// TestMetadataTTL changes the bucket behind the mount's back: the change is
// invisible until the TTL has passed, then visible.
func TestMetadataTTL(t *testing.T) {
	const ttl = 2 * time.Second
	forEachStore(t, []cacheKind{realCache, fakeLocal}, func(t *testing.T, store objstore.Store, kind cacheKind) {
		put(t, store, "f", []byte("v1"))
		m := mountStore(t, store, mountSpec{cache: kind, cfg: Config{Spec: mountspec.Spec{MetadataTTL: ttl, NegativeMetadataTTL: ttl}}})

		readF := func() string {
			return string(must(t, "read", func() ([]byte, error) { return os.ReadFile(path(m, "f")) }))
		}
		statErr := func(name string) error {
			_, err := within(t, "stat", func() (os.FileInfo, error) { return os.Stat(path(m, name)) })
			return err
		}
		// The TTLs run from the first lookups, so the checks below prove
		// something only if they end within ttl of this.
		cached := time.Now()
		if got := readF(); got != "v1" {
			t.Fatalf("first read %q", got)
		}
		if err := statErr("new"); !os.IsNotExist(err) {
			t.Fatalf("stat new: %v, want ENOENT", err)
		}
		put(t, store, "f", []byte("version-2"))
		put(t, store, "new", []byte("n"))

		// Before the TTL: the old size, content and absence.
		got, err := readF(), statErr("new")
		if took := time.Since(cached); took >= ttl {
			t.Fatalf("checks took %v, longer than the TTL: the test proves nothing", took)
		}
		if got != "v1" {
			t.Errorf("read right after the change = %q, want the cached v1", got)
		}
		if !os.IsNotExist(err) {
			t.Errorf("stat new right after creation: %v, want the cached ENOENT", err)
		}

		time.Sleep(ttl + 500*time.Millisecond)
		if got := readF(); got != "version-2" {
			t.Errorf("read after the TTL = %q, want version-2", got)
		}
		if err := statErr("new"); err != nil {
			t.Errorf("stat new after the negative TTL: %v", err)
		}
	})
}

// TestMetadataTTLZeroAndForever checks both ends of the scale.
func TestMetadataTTLZeroAndForever(t *testing.T) {
	for _, tc := range []struct {
		name        string
		ttl         time.Duration
		wantVisible bool
	}{
		{"zero", 0, true},
		{"forever", -1, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			store, _ := newFileStore(t)
			put(t, store, "f", []byte("v1"))
			m := mountStore(t, store, mountSpec{cfg: Config{Spec: mountspec.Spec{MetadataTTL: tc.ttl, NegativeMetadataTTL: tc.ttl}}})
			must(t, "stat", func() (os.FileInfo, error) { return os.Stat(path(m, "f")) }) // cache the attributes
			put(t, store, "f", []byte("version-2"))
			time.Sleep(100 * time.Millisecond)
			fi := must(t, "stat", func() (os.FileInfo, error) { return os.Stat(path(m, "f")) })
			if visible := fi.Size() == 9; visible != tc.wantVisible {
				t.Errorf("size %d after the change; visible=%v, want %v", fi.Size(), visible, tc.wantVisible)
			}
		})
	}
}

// TestReaddirSeesNewNameAfterTTL: a directory the mount listed shows a
// name another writer added to the bucket once the TTL has passed (the
// kernel's readdir cache of the first listing is not kept).
func TestReaddirSeesNewNameAfterTTL(t *testing.T) {
	const ttl = 2 * time.Second
	forEachStore(t, []cacheKind{realCache}, func(t *testing.T, store objstore.Store, kind cacheKind) {
		put(t, store, "d/seed", []byte("s"))
		m := mountStore(t, store, mountSpec{cache: kind, cfg: Config{Spec: mountspec.Spec{MetadataTTL: ttl, NegativeMetadataTTL: ttl}}})
		if got := names(t, path(m, "d")); !slices.Equal(got, []string{"seed"}) {
			t.Fatalf("first listing %v", got)
		}
		put(t, store, "d/new", []byte("n"))
		time.Sleep(ttl + 500*time.Millisecond)
		if got := names(t, path(m, "d")); !slices.Equal(got, []string{"new", "seed"}) {
			t.Errorf("listing after the TTL %v, want [new seed]", got)
		}
	})
}

package fuse

import (
	"fmt"
	"github.com/basin-csi/basin/pkg/mountspec"
	"os"
	"slices"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/basin-csi/basin/pkg/objstore"
)

// putMany stores n small objects dir/f00000... with 16 writers.
func putMany(t *testing.T, store objstore.Store, dir string, n int) []string {
	t.Helper()
	names := make([]string, n)
	for i := range names {
		names[i] = fmt.Sprintf("f%05d", i)
	}
	var wg sync.WaitGroup
	errs := make(chan error, 16)
	for w := 0; w < 16; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := w; i < n; i += 16 {
				data := []byte(names[i])
				if _, err := store.Put(t.Context(), dir+"/"+names[i], bytesReader(data), objstore.PutOptions{Size: int64(len(data))}); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	return names
}

func TestListLargeDirectory(t *testing.T) {
	const n = 10000
	for _, s := range stores {
		t.Run(s.name, func(t *testing.T) {
			store := s.open(t)
			names := putMany(t, store, "big", n)
			for _, kind := range []cacheKind{realCache, fakeLocal} {
				t.Run(string(kind), func(t *testing.T) { testListLargeDirectory(t, store, kind, names) })
			}
		})
	}
}

func testListLargeDirectory(t *testing.T, store objstore.Store, kind cacheKind, names []string) {
	m := mountStore(t, store, mountSpec{cache: kind, cfg: Config{Spec: mountspec.Spec{MetadataTTL: time.Minute}}})
	start := time.Now()
	// Ten pages of the bucket's listing: on a machine whose cores other
	// tests keep busy the bucket took 28 s, and once over a minute.
	entries, err := withinFor(t, "readdir", 4*syscallTimeout, func() ([]os.DirEntry, error) { return os.ReadDir(path(m, "big")) })
	if err != nil {
		t.Fatalf("readdir: %v", err)
	}
	t.Logf("cold readdir of %d entries: %v", len(entries), time.Since(start))
	got := make([]string, len(entries))
	for i, e := range entries {
		got[i] = e.Name()
		if !e.Type().IsRegular() {
			t.Fatalf("%s: type %v, want a regular file", e.Name(), e.Type())
		}
	}
	if !slices.Equal(got, names) {
		t.Fatalf("readdir: %d names, want %d (first %v)", len(got), len(names), got[:min(3, len(got))])
	}
	// READDIRPLUS answered the attributes: stat needs no HEAD.
	if fc, ok := m.cache.(*fakeCache); ok {
		before := fc.stats.Load()
		for _, name := range []string{"f00000", "f04999", "f09999"} {
			fi := must(t, "stat", func() (os.FileInfo, error) { return os.Stat(path(m, "big/"+name)) })
			if fi.Size() != int64(len(name)) {
				t.Errorf("%s: size %d, want %d", name, fi.Size(), len(name))
			}
		}
		if d := fc.stats.Load() - before; d != 0 {
			t.Errorf("stat after readdir made %d HEAD requests, want 0", d)
		}
		if l := fc.lists.Load(); l != 1 {
			t.Errorf("%d listings of the directory, want 1", l)
		}
	}
	// A second readdir within the TTL is served without a new listing.
	start = time.Now()
	again, err := withinFor(t, "readdir", 4*syscallTimeout, func() ([]os.DirEntry, error) { return os.ReadDir(path(m, "big")) })
	if err != nil {
		t.Fatalf("warm readdir: %v", err)
	}
	t.Logf("warm readdir: %v", time.Since(start))
	if len(again) != len(names) {
		t.Errorf("second readdir: %d entries", len(again))
	}
}

func TestImplicitDirectories(t *testing.T) {
	forEachStoreOf(t, namespaceStores, []cacheKind{realCache, fakeLocal}, func(t *testing.T, store objstore.Store, kind cacheKind) {
		put(t, store, "a/b/c.txt", []byte("c"))
		put(t, store, "a/d.txt", []byte("dd"))
		put(t, store, "marker/", nil)           // an empty directory by marker
		put(t, store, "both/", nil)             // a marker and content
		put(t, store, "both/x", []byte("x"))    //
		put(t, store, "deep/1/2/3/4", []byte{}) // only implicit levels
		m := mountStore(t, store, mountSpec{cache: kind})

		// Lookup without a prior readdir (fresh mount).
		for _, dir := range []string{"deep/1/2/3", "a/b", "marker", "both"} {
			fi := must(t, "stat "+dir, func() (os.FileInfo, error) { return os.Stat(path(m, dir)) })
			if !fi.IsDir() {
				t.Errorf("%s: mode %v, want a directory", dir, fi.Mode())
			}
		}
		cases := map[string][]string{
			"":       {"a/", "both/", "deep/", "marker/"},
			"a":      {"b/", "d.txt"},
			"a/b":    {"c.txt"},
			"marker": {},
			"both":   {"x"},
		}
		for dir, want := range cases {
			entries := must(t, "readdir "+dir, func() ([]os.DirEntry, error) { return os.ReadDir(path(m, dir)) })
			got := []string{}
			for _, e := range entries {
				name := e.Name()
				if e.IsDir() {
					name += "/"
				}
				got = append(got, name)
			}
			if !slices.Equal(got, want) {
				t.Errorf("readdir %q = %v, want %v", dir, got, want)
			}
		}
		_, err := within(t, "stat missing", func() (os.FileInfo, error) { return os.Stat(path(m, "a/nope")) })
		if errnoOf(err) != syscall.ENOENT {
			t.Errorf("stat missing: %v, want ENOENT", err)
		}
	})
}

func TestObjectShadowsPrefix(t *testing.T) {
	// Only a bucket can hold both "x" and "x/y".
	store := newMinIOStore(t, nil)
	put(t, store, "x", []byte("file"))
	put(t, store, "x/y", []byte("hidden"))
	m := mountStore(t, store, mountSpec{cache: fakeLocal})
	entries := must(t, "readdir", func() ([]os.DirEntry, error) { return os.ReadDir(m.dir) })
	if len(entries) != 1 || entries[0].Name() != "x" || entries[0].IsDir() {
		t.Fatalf("readdir = %v, want the single file x", entries)
	}
	got := must(t, "read", func() ([]byte, error) { return os.ReadFile(path(m, "x")) })
	if string(got) != "file" {
		t.Errorf("x = %q", got)
	}
}

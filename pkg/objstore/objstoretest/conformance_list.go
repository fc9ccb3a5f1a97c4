package objstoretest

import (
	"fmt"
	"slices"
	"sync"
	"testing"

	"github.com/basin-csi/basin/pkg/objstore"
)

func equalStrings(a, b []string) bool { return slices.Equal(a, b) }

func sortStrings(s []string) { slices.Sort(s) }

// putMany stores a small object under every key, 16 at a time.
func putMany(t *testing.T, s objstore.Store, keys []string) {
	t.Helper()
	work := make(chan string)
	var wg sync.WaitGroup
	for range 16 {
		wg.Go(func() {
			for k := range work {
				if _, err := s.Put(t.Context(), k, stringsReader(k), objstore.PutOptions{Size: int64(len(k))}); err != nil {
					t.Errorf("Put(%q): %v", k, err)
				}
			}
		})
	}
	for _, k := range keys {
		work <- k
	}
	close(work)
	wg.Wait()
	if t.Failed() {
		t.FailNow()
	}
}

func testListOrder(t *testing.T, h Harness) {
	s := h.NewStore(t)
	// Characters sorting before '/' ('!', '-', '.', ' ') make key order
	// differ from a naive directory walk.
	keys := []string{
		"ord/a/b", "ord/a/c/d", "ord/a-b", "ord/a.b", "ord/a0", "ord/ab",
		"ord/a!", "ord/a b", "ord/a/b!", "ord/a/b-", "ord/b", "ord/a.b.c/x",
	}
	putMany(t, s, keys)
	want := slices.Clone(keys)
	slices.Sort(want)

	objects, prefixes := listAll(t, s, objstore.ListOptions{})
	if got := keysOf(objects); !slices.Equal(got, want) || len(prefixes) != 0 {
		t.Errorf("List = %q, %q\nwant %q", got, prefixes, want)
	}
	for _, o := range objects {
		if o.Size != int64(len(o.Key)) || o.Version == "" || o.ModTime.IsZero() {
			t.Errorf("listed %+v, want size %d, a version and a time", o, len(o.Key))
		}
	}
	for _, max := range []int{1, 2, 5} {
		objects, _ := listAll(t, s, objstore.ListOptions{MaxKeys: max})
		if got := keysOf(objects); !slices.Equal(got, want) {
			t.Errorf("List(MaxKeys %d) = %q\nwant %q", max, got, want)
		}
	}

	objects, prefixes = listAll(t, s, objstore.ListOptions{Prefix: "ord/", Delimiter: "/"})
	wantObjects := []string{"ord/a b", "ord/a!", "ord/a-b", "ord/a.b", "ord/a0", "ord/ab", "ord/b"}
	wantPrefixes := []string{"ord/a.b.c/", "ord/a/"}
	if got := keysOf(objects); !slices.Equal(got, wantObjects) || !slices.Equal(prefixes, wantPrefixes) {
		t.Errorf("List(ord/, /) = %q, %q\nwant %q, %q", got, prefixes, wantObjects, wantPrefixes)
	}
	for _, max := range []int{1, 3} {
		objects, prefixes := listAll(t, s, objstore.ListOptions{Prefix: "ord/", Delimiter: "/", MaxKeys: max})
		if got := keysOf(objects); !slices.Equal(got, wantObjects) || !slices.Equal(prefixes, wantPrefixes) {
			t.Errorf("List(ord/, /, MaxKeys %d) = %q, %q", max, got, prefixes)
		}
	}
	// A prefix that ends inside a name.
	objects, prefixes = listAll(t, s, objstore.ListOptions{Prefix: "ord/a.", Delimiter: "/"})
	if got := keysOf(objects); !slices.Equal(got, []string{"ord/a.b"}) || !slices.Equal(prefixes, []string{"ord/a.b.c/"}) {
		t.Errorf("List(ord/a., /) = %q, %q", got, prefixes)
	}
	objects, _ = listAll(t, s, objstore.ListOptions{Prefix: "ord/a/b"})
	if got := keysOf(objects); !slices.Equal(got, []string{"ord/a/b", "ord/a/b!", "ord/a/b-"}) {
		t.Errorf("List(ord/a/b) = %q", got)
	}
	if objects, prefixes := listAll(t, s, objstore.ListOptions{Prefix: "nothing/", Delimiter: "/"}); len(objects)+len(prefixes) != 0 {
		t.Errorf("List(nothing/) = %q, %q", keysOf(objects), prefixes)
	}
}

func testListPagination(t *testing.T, h Harness) {
	s := h.NewStore(t)
	const n = 1100
	keys := make([]string, 0, n)
	for i := range n {
		keys = append(keys, fmt.Sprintf("page/k%04d", i))
	}
	putMany(t, s, keys)

	for _, o := range []objstore.ListOptions{
		{Prefix: "page/"},
		{Prefix: "page/", MaxKeys: 1000},
		{Prefix: "page/", MaxKeys: 97},
		{Prefix: "page/", Delimiter: "/"},
		{},
	} {
		objects, prefixes := listAll(t, s, o)
		if got := keysOf(objects); !slices.Equal(got, keys) || len(prefixes) != 0 {
			t.Errorf("List(%+v) returned %d objects and %d prefixes, want the %d keys in order", o, len(got), len(prefixes), n)
		}
	}
	page, err := s.List(t.Context(), objstore.ListOptions{Prefix: "page/"})
	if err != nil {
		t.Fatal(err)
	}
	if len(page.Objects) == 0 || len(page.Objects) > 1000 || page.NextToken == "" {
		t.Errorf("first default page: %d objects, token %q; want 1..1000 and a token", len(page.Objects), page.NextToken)
	}
	// The last page carries no token.
	page, err = s.List(t.Context(), objstore.ListOptions{Prefix: "page/k10", MaxKeys: 100})
	if err != nil {
		t.Fatal(err)
	}
	if len(page.Objects) != 100 {
		t.Errorf("List(page/k10, MaxKeys 100) = %d objects, want 100", len(page.Objects))
	}
	if page.NextToken != "" {
		t.Logf("a full last page carries a token (%q); allowed, the next page must be empty", page.NextToken)
		next, err := s.List(t.Context(), objstore.ListOptions{Prefix: "page/k10", MaxKeys: 100, ContinuationToken: page.NextToken})
		if err != nil || len(next.Objects)+len(next.CommonPrefixes) != 0 || next.NextToken != "" {
			t.Errorf("page after the last = %d objects, token %q, %v", len(next.Objects), next.NextToken, err)
		}
	}

	// Many common prefixes, paged.
	dirs := make([]string, 0, 30)
	var dirKeys []string
	for i := range 30 {
		d := fmt.Sprintf("tree/d%02d/", i)
		dirs = append(dirs, d)
		dirKeys = append(dirKeys, d+"x", d+"y/z")
	}
	putMany(t, s, dirKeys)
	for _, max := range []int{0, 1, 7} {
		objects, prefixes := listAll(t, s, objstore.ListOptions{Prefix: "tree/", Delimiter: "/", MaxKeys: max})
		if len(objects) != 0 || !slices.Equal(prefixes, dirs) {
			t.Errorf("List(tree/, /, MaxKeys %d) = %q, %q", max, keysOf(objects), prefixes)
		}
	}
	objects, prefixes := listAll(t, s, objstore.ListOptions{Delimiter: "/"})
	if len(objects) != 0 || !slices.Equal(prefixes, []string{"page/", "tree/"}) {
		t.Errorf("List(/) = %q, %q", keysOf(objects), prefixes)
	}

	// DeletePrefix beyond one batch of 1000.
	count, err := s.DeletePrefix(t.Context(), "page/")
	if err != nil || count != n {
		t.Errorf("DeletePrefix(page/) = %d, %v; want %d", count, err, n)
	}
	if objects, _ := listAll(t, s, objstore.ListOptions{Prefix: "page/"}); len(objects) != 0 {
		t.Errorf("%d objects left after DeletePrefix", len(objects))
	}
}

func testListDelimiter(t *testing.T, h Harness) {
	s := h.NewStore(t)
	putMany(t, s, []string{"a/b/c", "top", "x/y", "x/z/w", "x/z/v", "x/zz"})
	cases := []struct {
		opts              objstore.ListOptions
		objects, prefixes []string
	}{
		{objstore.ListOptions{Delimiter: "/"}, []string{"top"}, []string{"a/", "x/"}},
		{objstore.ListOptions{Prefix: "a/", Delimiter: "/"}, nil, []string{"a/b/"}},
		{objstore.ListOptions{Prefix: "a/b/", Delimiter: "/"}, []string{"a/b/c"}, nil},
		{objstore.ListOptions{Prefix: "a", Delimiter: "/"}, nil, []string{"a/"}},
		{objstore.ListOptions{Prefix: "x/", Delimiter: "/"}, []string{"x/y", "x/zz"}, []string{"x/z/"}},
		{objstore.ListOptions{Prefix: "x/z", Delimiter: "/"}, []string{"x/zz"}, []string{"x/z/"}},
		{objstore.ListOptions{Prefix: "x/z/"}, []string{"x/z/v", "x/z/w"}, nil},
		{objstore.ListOptions{Prefix: "t"}, []string{"top"}, nil},
		{objstore.ListOptions{Prefix: "top/", Delimiter: "/"}, nil, nil},
		{objstore.ListOptions{Prefix: "missing/", Delimiter: "/"}, nil, nil},
	}
	for _, c := range cases {
		objects, prefixes := listAll(t, s, c.opts)
		if got := keysOf(objects); !slices.Equal(got, c.objects) || !slices.Equal(prefixes, c.prefixes) {
			t.Errorf("List(%+v) = %q, %q\nwant %q, %q", c.opts, got, prefixes, c.objects, c.prefixes)
		}
	}
	// Once the last object below a prefix is gone, so is the prefix.
	if err := s.Delete(t.Context(), "a/b/c"); err != nil {
		t.Fatal(err)
	}
	objects, prefixes := listAll(t, s, objstore.ListOptions{Delimiter: "/"})
	if got := keysOf(objects); !slices.Equal(got, []string{"top"}) || !slices.Equal(prefixes, []string{"x/"}) {
		t.Errorf("List(/) after deleting a/b/c = %q, %q", got, prefixes)
	}
}

func testDirectoryMarker(t *testing.T, h Harness) {
	s := h.NewStore(t)
	marker := mustPut(t, s, "dir/", nil)
	mustPut(t, s, "empty/", nil)
	mustPut(t, s, "dir/f", []byte("f"))
	if st := mustStat(t, s, "dir/"); st.Size != 0 || st.Version != marker.Version {
		t.Errorf("Stat(dir/) = %+v", st)
	}
	_, err := s.Stat(t.Context(), "dir")
	wantErr(t, "Stat(dir) with only dir/ present", err, objstore.ErrNotFound)

	check := func(opts objstore.ListOptions, wantObjects, wantPrefixes []string) {
		t.Helper()
		objects, prefixes := listAll(t, s, opts)
		if got := keysOf(objects); !slices.Equal(got, wantObjects) || !slices.Equal(prefixes, wantPrefixes) {
			t.Errorf("List(%+v) = %q, %q\nwant %q, %q", opts, got, prefixes, wantObjects, wantPrefixes)
		}
	}
	check(objstore.ListOptions{Delimiter: "/"}, nil, []string{"dir/", "empty/"})
	check(objstore.ListOptions{}, []string{"dir/", "dir/f", "empty/"}, nil)
	check(objstore.ListOptions{Prefix: "dir/", Delimiter: "/"}, []string{"dir/", "dir/f"}, nil)
	check(objstore.ListOptions{Prefix: "empty/", Delimiter: "/"}, []string{"empty/"}, nil)

	// Deleting the marker keeps the objects below it, and the other way round.
	if err := s.Delete(t.Context(), "dir/"); err != nil {
		t.Fatal(err)
	}
	check(objstore.ListOptions{}, []string{"dir/f", "empty/"}, nil)
	mustPut(t, s, "dir/", nil)
	if err := s.Delete(t.Context(), "dir/f"); err != nil {
		t.Fatal(err)
	}
	check(objstore.ListOptions{Delimiter: "/"}, nil, []string{"dir/", "empty/"})
	check(objstore.ListOptions{}, []string{"dir/", "empty/"}, nil)
}

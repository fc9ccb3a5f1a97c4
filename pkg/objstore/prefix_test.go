package objstore_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/basin-csi/basin/pkg/objstore"
	"github.com/basin-csi/basin/pkg/objstore/objstoretest"
)

// neighbours are keys around the prefix "vol/" that a view must not touch.
var neighbours = []string{"vol", "vol/", "vol0/x", "vola", "other/vol/x", "a"}

func newUnder(t *testing.T) *objstoretest.Fake {
	t.Helper()
	f := objstoretest.NewFake()
	for _, k := range neighbours {
		if _, err := f.Put(t.Context(), k, strings.NewReader("n"), objstore.PutOptions{Size: 1}); err != nil {
			t.Fatal(err)
		}
	}
	return f
}

func TestWithPrefixConformance(t *testing.T) {
	// "/vol" also checks the normalisation to "vol/"; TestWithPrefix uses "vol".
	for _, prefix := range []string{"/vol"} {
		t.Run(prefix, func(t *testing.T) {
			objstoretest.RunConformance(t, objstoretest.Harness{
				NewStore: func(t *testing.T) objstore.Store {
					under := newUnder(t)
					t.Cleanup(func() {
						// Whatever the suite did, the neighbours are intact.
						for _, k := range neighbours {
							if _, err := under.Stat(context.Background(), k); err != nil {
								t.Errorf("neighbour %q: %v", k, err)
							}
						}
					})
					return objstore.WithPrefix(under, prefix)
				},
			})
		})
	}
}

func TestWithPrefix(t *testing.T) {
	ctx := t.Context()
	under := newUnder(t)
	v := objstore.WithPrefix(under, "vol")
	for _, k := range []string{"f", "d/g", "d/h/i"} {
		info, err := v.Put(ctx, k, strings.NewReader("x"), objstore.PutOptions{Size: 1})
		if err != nil || info.Key != k {
			t.Fatalf("Put(%q) = %+v, %v", k, info, err)
		}
	}
	if got := under.Keys(); !slices.Contains(got, "vol/d/h/i") || !slices.Contains(got, "vol/f") {
		t.Errorf("underlying keys = %q", got)
	}

	cases := []struct {
		opts              objstore.ListOptions
		objects, prefixes []string
	}{
		{objstore.ListOptions{Delimiter: "/"}, []string{"f"}, []string{"d/"}},
		{objstore.ListOptions{}, []string{"d/g", "d/h/i", "f"}, nil},
		{objstore.ListOptions{Prefix: "d/", Delimiter: "/"}, []string{"d/g"}, []string{"d/h/"}},
		{objstore.ListOptions{Delimiter: "/", MaxKeys: 1}, []string{"f"}, []string{"d/"}},
	}
	for _, c := range cases {
		var objects, prefixes []string
		err := objstore.ListAll(ctx, v, c.opts, func(p objstore.ListPage) error {
			for _, o := range p.Objects {
				objects = append(objects, o.Key)
			}
			prefixes = append(prefixes, p.CommonPrefixes...)
			return nil
		})
		if err != nil || !slices.Equal(objects, c.objects) || !slices.Equal(prefixes, c.prefixes) {
			t.Errorf("List(%+v) = %q, %q, %v; want %q, %q", c.opts, objects, prefixes, err, c.objects, c.prefixes)
		}
	}

	if info, err := v.Copy(ctx, "f", "d/f2"); err != nil || info.Key != "d/f2" {
		t.Errorf("Copy = %+v, %v", info, err)
	}
	if _, rinfo, err := v.Read(ctx, "d/f2", objstore.ReadOptions{Length: -1}); err != nil || rinfo.Key != "d/f2" {
		t.Errorf("Read = %+v, %v", rinfo, err)
	}
	if _, err := under.Stat(ctx, "vol/d/f2"); err != nil {
		t.Errorf("copy is not at vol/d/f2: %v", err)
	}

	for name, call := range map[string]func() error{
		"Stat":   func() error { _, err := v.Stat(ctx, ""); return err },
		"Read":   func() error { _, _, err := v.Read(ctx, "", objstore.ReadOptions{}); return err },
		"Put":    func() error { _, err := v.Put(ctx, "", strings.NewReader(""), objstore.PutOptions{}); return err },
		"Delete": func() error { return v.Delete(ctx, "") },
		"Copy":   func() error { _, err := v.Copy(ctx, "f", ""); return err },
	} {
		if err := call(); !errors.Is(err, objstore.ErrInvalidKey) {
			t.Errorf("%s of the empty key = %v, want ErrInvalidKey", name, err)
		}
	}
	if _, err := under.Stat(ctx, "vol/"); err != nil {
		t.Errorf("the prefix's marker went away: %v", err)
	}

	// DeletePrefix("") empties the volume, marker included, and nothing else.
	n, err := v.DeletePrefix(ctx, "")
	if err != nil || n != 5 {
		t.Errorf("DeletePrefix(\"\") = %d, %v; want 5 (4 objects + the marker)", n, err)
	}
	want := []string{"a", "other/vol/x", "vol", "vol0/x", "vola"}
	if got := under.Keys(); !slices.Equal(got, want) {
		t.Errorf("underlying keys after DeletePrefix = %q, want %q", got, want)
	}

	if objstore.WithPrefix(under, "") != objstore.Store(under) || objstore.WithPrefix(under, "/") != objstore.Store(under) {
		t.Error("an empty prefix must return the store itself")
	}
	if err := v.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := under.Stat(ctx, "a"); !errors.Is(err, objstore.ErrUnavailable) {
		t.Errorf("Close of the view did not close the store: %v", err)
	}
}

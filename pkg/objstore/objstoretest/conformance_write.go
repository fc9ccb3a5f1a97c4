package objstoretest

import (
	"bytes"
	"crypto/sha256"
	"io"
	"slices"
	"strings"
	"testing"

	"github.com/basin-csi/basin/pkg/objstore"
)

func stringsReader(s string) io.Reader { return strings.NewReader(s) }

// onlyReader hides every method but Read (no Seek, no WriterTo, no Len), as
// a pipe or a FUSE write stream would.
type onlyReader struct{ r io.Reader }

func (o onlyReader) Read(p []byte) (int, error) { return o.r.Read(p) }

func testMultipart(t *testing.T, h Harness) {
	s := h.NewStore(t)
	// 12 MiB + 1: more than the default 8 MiB part, and not a multiple of
	// any usual part size, so the last part is short.
	data := patternBytes(3, 12<<20+1)
	sum := sha256.Sum256(data)
	for _, c := range []struct {
		name string
		body io.Reader
		size int64
	}{
		{"known size", bytes.NewReader(data), int64(len(data))},
		{"unknown size", onlyReader{bytes.NewReader(data)}, -1},
	} {
		t.Run(c.name, func(t *testing.T) {
			key := "big/" + strings.ReplaceAll(c.name, " ", "-")
			put, err := s.Put(t.Context(), key, c.body, objstore.PutOptions{Size: c.size})
			if err != nil {
				t.Fatalf("Put: %v", err)
			}
			if put.Size != int64(len(data)) || put.Version == "" {
				t.Errorf("Put = %+v, want size %d", put, len(data))
			}
			st := mustStat(t, s, key)
			if st.Size != int64(len(data)) || st.Version != put.Version {
				t.Errorf("Stat = %+v, want size %d, version %q", st, len(data), put.Version)
			}
			got, _ := mustRead(t, s, key, objstore.ReadOptions{Length: -1})
			if sha256.Sum256(got) != sum {
				t.Fatalf("read back %d bytes that differ from the %d put", len(got), len(data))
			}
			// Ranges across the usual part boundaries (5, 8 MiB).
			for _, off := range []int64{5<<20 - 7, 8<<20 - 7, int64(len(data)) - 3} {
				got, _ := mustRead(t, s, key, objstore.ReadOptions{Offset: off, Length: 14, IfVersion: put.Version})
				end := min(off+14, int64(len(data)))
				if !bytes.Equal(got, data[off:end]) {
					t.Errorf("Read(%d, 14) differs", off)
				}
			}
		})
	}
}

func testCopy(t *testing.T, h Harness) {
	s := h.NewStore(t)
	data := patternBytes(4, 300<<10)
	src := mustPut(t, s, "src/ünïcödé ✓ file", data)

	cases := []struct{ src, dst string }{
		{"src/ünïcödé ✓ file", "dst/cöpy ✓ +%"},
		{"src/ünïcödé ✓ file", "src/ünïcödé ✓ file 2"},
		{"dst/cöpy ✓ +%", "third"},
	}
	for _, c := range cases {
		info, err := s.Copy(t.Context(), c.src, c.dst)
		if err != nil {
			t.Fatalf("Copy(%q, %q): %v", c.src, c.dst, err)
		}
		st := mustStat(t, s, c.dst)
		if info.Key != c.dst || info.Size != int64(len(data)) || info.Version == "" || info.Version != st.Version {
			t.Errorf("Copy(%q, %q) = %+v; Stat = %+v", c.src, c.dst, info, st)
		}
		got, _ := mustRead(t, s, c.dst, objstore.ReadOptions{Length: -1})
		if !bytes.Equal(got, data) {
			t.Errorf("Copy(%q, %q): copy has other bytes", c.src, c.dst)
		}
	}
	if st := mustStat(t, s, src.Key); st.Version != src.Version {
		t.Errorf("Copy changed the source's version: %q -> %q", src.Version, st.Version)
	}

	// Copy over an existing object replaces it and changes its version.
	old := mustPut(t, s, "target", []byte("old"))
	info, err := s.Copy(t.Context(), "src/ünïcödé ✓ file", "target")
	if err != nil {
		t.Fatal(err)
	}
	if info.Version == old.Version || info.Size != int64(len(data)) {
		t.Errorf("Copy over target = %+v, old version %q", info, old.Version)
	}
	_, _, err = readRange(t.Context(), s, "target", objstore.ReadOptions{Length: -1, IfVersion: old.Version})
	wantErr(t, "Read(target, IfVersion old) after Copy", err, objstore.ErrPreconditionFailed)

	objects, _ := listAll(t, s, objstore.ListOptions{})
	want := []string{"dst/cöpy ✓ +%", "src/ünïcödé ✓ file", "src/ünïcödé ✓ file 2", "target", "third"}
	if got := keysOf(objects); !slices.Equal(got, want) {
		t.Errorf("List = %q\nwant %q", got, want)
	}
}

func testDeletePrefix(t *testing.T, h Harness) {
	s := h.NewStore(t)
	putMany(t, s, []string{"del/a", "del/b/c", "del/b/d", "del/ü", "delx", "keep/e", "keep/del/f"})
	mustPut(t, s, "del/", nil)
	count, err := s.DeletePrefix(t.Context(), "del/")
	if err != nil || count != 5 {
		t.Errorf("DeletePrefix(del/) = %d, %v; want 5", count, err)
	}
	objects, _ := listAll(t, s, objstore.ListOptions{})
	if got := keysOf(objects); !slices.Equal(got, []string{"delx", "keep/del/f", "keep/e"}) {
		t.Errorf("List after DeletePrefix(del/) = %q", got)
	}
	count, err = s.DeletePrefix(t.Context(), "nothing/")
	if err != nil || count != 0 {
		t.Errorf("DeletePrefix(nothing/) = %d, %v; want 0", count, err)
	}
	// A prefix that is not a directory.
	count, err = s.DeletePrefix(t.Context(), "de")
	if err != nil || count != 1 {
		t.Errorf("DeletePrefix(de) = %d, %v; want 1", count, err)
	}
	objects, prefixes := listAll(t, s, objstore.ListOptions{Delimiter: "/"})
	if got := keysOf(objects); len(got) != 0 || !slices.Equal(prefixes, []string{"keep/"}) {
		t.Errorf("List(/) at the end = %q, %q", got, prefixes)
	}
}

package gcsstore

import (
	"bytes"
	"errors"
	"io"
	"strconv"
	"strings"
	"testing"
	"testing/iotest"

	"github.com/basin-csi/basin/pkg/objstore"
)

// These tests run against testserver's shared fake-gcs-server (filesystem
// backend). What fake-gcs-server emulates faithfully, as checked here: a
// new generation on every overwrite and copy, generation-pinned downloads,
// Range handling including 416 past the end, resumable uploads, rewrite
// (copy), startOffset in listings. What it does not: see doc.go.

func put(t *testing.T, s *Store, key, body string) objstore.ObjectInfo {
	t.Helper()
	info, err := s.Put(t.Context(), key, strings.NewReader(body), objstore.PutOptions{Size: int64(len(body))})
	if err != nil {
		t.Fatalf("Put(%q): %v", key, err)
	}
	return info
}

func readAll(t *testing.T, s *Store, key string, o objstore.ReadOptions) (string, objstore.ObjectInfo, error) {
	t.Helper()
	rc, info, err := s.Read(t.Context(), key, o)
	if err != nil {
		return "", info, err
	}
	defer func() { _ = rc.Close() }()
	b, err := io.ReadAll(rc)
	return string(b), info, err
}

func TestVersionIsGeneration(t *testing.T) {
	s := newTestStore(t)
	v1 := put(t, s, "obj", "one")
	v2 := put(t, s, "obj", "two")
	for _, v := range []objstore.ObjectInfo{v1, v2} {
		if g, err := strconv.ParseInt(v.Version, 10, 64); err != nil || g <= 0 {
			t.Errorf("Version %q is not a positive decimal generation", v.Version)
		}
	}
	if v1.Version == v2.Version {
		t.Fatalf("overwrite kept generation %s", v1.Version)
	}
	st, err := s.Stat(t.Context(), "obj")
	if err != nil || st.Version != v2.Version || !st.ModTime.Equal(st.ModTime.Truncate(1e9)) {
		t.Errorf("Stat = %+v, %v; want version %s, whole-second time", st, err, v2.Version)
	}
	_, info, err := readAll(t, s, "obj", objstore.ReadOptions{Offset: 1, Length: 1})
	// A read does not carry metadata; the rest must match.
	if err != nil || info.Key != st.Key || info.Size != st.Size || info.Version != st.Version || !info.ModTime.Equal(st.ModTime) {
		t.Errorf("Read info = %+v, %v; want Stat's %+v", info, err, st)
	}
}

func TestReadIfVersion(t *testing.T) {
	s := newTestStore(t)
	old := put(t, s, "obj", "old bytes")
	cur := put(t, s, "obj", "new bytes")
	cases := []struct {
		name string
		opts objstore.ReadOptions
		want error
		body string
	}{
		{"current", objstore.ReadOptions{Length: -1, IfVersion: cur.Version}, nil, "new bytes"},
		{"current range", objstore.ReadOptions{Offset: 4, Length: 3, IfVersion: cur.Version}, nil, "byt"},
		// fake-gcs-server ignores ifGenerationMatch; the adapter's own
		// generation check is what fails these.
		{"stale", objstore.ReadOptions{Length: -1, IfVersion: old.Version}, objstore.ErrPreconditionFailed, ""},
		{"stale at end", objstore.ReadOptions{Offset: 9, Length: -1, IfVersion: old.Version}, objstore.ErrPreconditionFailed, ""},
		{"stale length 0", objstore.ReadOptions{Length: 0, IfVersion: old.Version}, objstore.ErrPreconditionFailed, ""},
		{"not a generation", objstore.ReadOptions{Length: -1, IfVersion: "etag-abc"}, objstore.ErrPreconditionFailed, ""},
		{"zero", objstore.ReadOptions{Length: -1, IfVersion: "0"}, objstore.ErrPreconditionFailed, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			body, _, err := readAll(t, s, "obj", c.opts)
			if c.want != nil {
				if !errors.Is(err, c.want) {
					t.Errorf("Read = %q, %v; want %v", body, err, c.want)
				}
				return
			}
			if err != nil || body != c.body {
				t.Errorf("Read = %q, %v; want %q", body, err, c.body)
			}
		})
	}
	if err := s.Delete(t.Context(), "obj"); err != nil {
		t.Fatal(err)
	}
	_, _, err := readAll(t, s, "obj", objstore.ReadOptions{Length: -1, IfVersion: cur.Version})
	if !errors.Is(err, objstore.ErrNotFound) {
		t.Errorf("Read(deleted, IfVersion) = %v, want ErrNotFound", err)
	}
}

func TestReadRangeEdges(t *testing.T) {
	s := newTestStore(t)
	put(t, s, "ten", "0123456789")
	put(t, s, "empty", "")
	cases := []struct {
		key    string
		offset int64
		length int64
		body   string
		want   error
	}{
		{"ten", 10, -1, "", nil},
		{"ten", 10, 5, "", nil},
		{"ten", 10, 0, "", nil},
		{"ten", 11, -1, "", objstore.ErrInvalidRange},
		{"ten", 11, 0, "", objstore.ErrInvalidRange},
		{"ten", -1, -1, "", objstore.ErrInvalidRange},
		{"ten", 8, 100, "89", nil},
		{"empty", 0, 10, "", nil},
		{"empty", 0, -1, "", nil},
		{"empty", 1, -1, "", objstore.ErrInvalidRange},
		{"missing", 0, -1, "", objstore.ErrNotFound},
	}
	for _, c := range cases {
		body, info, err := readAll(t, s, c.key, objstore.ReadOptions{Offset: c.offset, Length: c.length})
		if c.want != nil {
			if !errors.Is(err, c.want) {
				t.Errorf("Read(%s, %d, %d) = %v, want %v", c.key, c.offset, c.length, err, c.want)
			}
			continue
		}
		if err != nil || body != c.body || info.Key != c.key || info.Version == "" {
			t.Errorf("Read(%s, %d, %d) = %q, %+v, %v; want %q", c.key, c.offset, c.length, body, info, err, c.body)
		}
	}
}

func TestPutAborts(t *testing.T) {
	s := newTestStore(t)
	before := put(t, s, "obj", "kept")
	big := bytes.Repeat([]byte("x"), 3*testPartSize+5)

	t.Run("body fails", func(t *testing.T) {
		for _, size := range []int64{-1, int64(len(big))} {
			body := io.MultiReader(bytes.NewReader(big[:testPartSize+7]), iotest.ErrReader(errors.New("disk on fire")))
			_, err := s.Put(t.Context(), "obj", body, objstore.PutOptions{Size: size})
			if err == nil || !strings.Contains(err.Error(), "disk on fire") {
				t.Errorf("Put(size %d) with a failing body = %v", size, err)
			}
		}
	})
	t.Run("body shorter than Size", func(t *testing.T) {
		_, err := s.Put(t.Context(), "obj", bytes.NewReader(big), objstore.PutOptions{Size: int64(len(big)) + 1})
		if err == nil {
			t.Error("Put with a short body succeeded")
		}
	})
	st, err := s.Stat(t.Context(), "obj")
	if err != nil || st.Version != before.Version {
		t.Errorf("after failed Puts, Stat = %+v, %v; want the old version %s", st, err, before.Version)
	}
}

func TestPutResumable(t *testing.T) {
	s := newTestStore(t)
	data := make([]byte, 5*testPartSize+123)
	for i := range data {
		data[i] = byte(i * 7)
	}
	// An io.Reader without Len/Seek/WriteTo, as a FUSE write stream.
	info, err := s.Put(t.Context(), "big", struct{ io.Reader }{bytes.NewReader(data)}, objstore.PutOptions{Size: -1, ContentType: "application/x-test"})
	if err != nil {
		t.Fatalf("Put: %v", err)
	}
	if info.Size != int64(len(data)) {
		t.Errorf("Put = %+v, want size %d", info, len(data))
	}
	got, _, err := readAll(t, s, "big", objstore.ReadOptions{Offset: testPartSize - 3, Length: 6, IfVersion: info.Version})
	if err != nil || got != string(data[testPartSize-3:testPartSize+3]) {
		t.Errorf("Read across the chunk boundary = %q, %v", got, err)
	}
	attrs, err := s.bucket.Object("big").Attrs(t.Context())
	if err != nil || attrs.ContentType != "application/x-test" {
		t.Errorf("content type = %q, %v", attrs.ContentType, err)
	}
}

func TestCopyAndDeletePrefix(t *testing.T) {
	s := newTestStore(t)
	src := put(t, s, "src/a", "payload")
	cp, err := s.Copy(t.Context(), "src/a", "dst/a")
	if err != nil || cp.Key != "dst/a" || cp.Size != src.Size || cp.Version == "" {
		t.Fatalf("Copy = %+v, %v", cp, err)
	}
	if body, _, err := readAll(t, s, "dst/a", objstore.ReadOptions{Length: -1}); err != nil || body != "payload" {
		t.Errorf("copy reads %q, %v", body, err)
	}
	if _, err := s.Copy(t.Context(), "src/missing", "dst/b"); !errors.Is(err, objstore.ErrNotFound) {
		t.Errorf("Copy(missing) = %v, want ErrNotFound", err)
	}
	for i := range 25 {
		put(t, s, "tree/"+strconv.Itoa(i)+"/f", "x")
	}
	n, err := s.DeletePrefix(t.Context(), "tree/")
	if err != nil || n != 25 {
		t.Errorf("DeletePrefix(tree/) = %d, %v; want 25", n, err)
	}
	page, err := s.List(t.Context(), objstore.ListOptions{})
	if err != nil || len(page.Objects) != 2 {
		t.Errorf("left after DeletePrefix: %+v, %v; want src/a and dst/a", page, err)
	}
}

func TestListTokens(t *testing.T) {
	s := newTestStore(t)
	for _, k := range []string{"d1/x", "d1/y", "d2/x", "f1", "f2", "f3"} {
		put(t, s, k, k)
	}
	// fake-gcs-server answers every page of a delimited listing with all
	// common prefixes at or after the page token; pages must still hold at
	// most MaxKeys entries and never repeat one.
	var got []string
	opts := objstore.ListOptions{Delimiter: "/", MaxKeys: 2}
	for pages := 0; ; pages++ {
		if pages > 10 {
			t.Fatal("listing does not end")
		}
		page, err := s.List(t.Context(), opts)
		if err != nil {
			t.Fatal(err)
		}
		if n := len(page.Objects) + len(page.CommonPrefixes); n > 2 {
			t.Errorf("page of %d entries, MaxKeys 2", n)
		}
		got = append(got, page.CommonPrefixes...)
		for _, o := range page.Objects {
			got = append(got, o.Key)
		}
		if page.NextToken == "" {
			break
		}
		opts.ContinuationToken = page.NextToken
	}
	if want := "d1/ d2/ f1 f2 f3"; strings.Join(got, " ") != want {
		t.Errorf("listed %q, want %q", strings.Join(got, " "), want)
	}
	_, err := s.List(t.Context(), objstore.ListOptions{ContinuationToken: "not base64 !"})
	if err == nil {
		t.Error("List with a foreign token succeeded")
	}
}

func TestInvalidKeys(t *testing.T) {
	s := newTestStore(t)
	for _, k := range []string{"", "a/../b", "line\nfeed"} {
		if _, err := s.Put(t.Context(), k, strings.NewReader("x"), objstore.PutOptions{Size: 1}); !errors.Is(err, objstore.ErrInvalidKey) {
			t.Errorf("Put(%q) = %v, want ErrInvalidKey", k, err)
		}
		if _, err := s.Stat(t.Context(), k); !errors.Is(err, objstore.ErrInvalidKey) {
			t.Errorf("Stat(%q) = %v, want ErrInvalidKey", k, err)
		}
		if err := s.Delete(t.Context(), k); !errors.Is(err, objstore.ErrInvalidKey) {
			t.Errorf("Delete(%q) = %v, want ErrInvalidKey", k, err)
		}
	}
}

func TestMissingBucket(t *testing.T) {
	s, err := New(t.Context(), testConfig(sharedEndpoint(t), bucketName(t)), objstore.Credentials{})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = s.Close() }()
	if _, err := s.List(t.Context(), objstore.ListOptions{}); !errors.Is(err, objstore.ErrNotFound) {
		t.Errorf("List on a missing bucket = %v, want ErrNotFound", err)
	}
	if _, err := s.Stat(t.Context(), "k"); !errors.Is(err, objstore.ErrNotFound) {
		t.Errorf("Stat in a missing bucket = %v, want ErrNotFound", err)
	}
	// Not checked: Put, which fake-gcs-server answers by creating the bucket.
}

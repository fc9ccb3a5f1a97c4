package filestore_test

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/basin-csi/basin/pkg/objstore"
	"github.com/basin-csi/basin/pkg/objstore/filestore"
	"github.com/basin-csi/basin/pkg/objstore/objstoretest"
)

func put(t *testing.T, s objstore.Store, key, data string) objstore.ObjectInfo {
	t.Helper()
	info, err := s.Put(t.Context(), key, strings.NewReader(data), objstore.PutOptions{Size: int64(len(data))})
	if err != nil {
		t.Fatalf("Put(%q): %v", key, err)
	}
	return info
}

// tree returns every path below dir, directories with a trailing '/'.
func tree(t *testing.T, dir string) []string {
	t.Helper()
	var paths []string
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || p == dir {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		if d.IsDir() {
			rel += "/"
		}
		paths = append(paths, rel)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return paths
}

func TestLayout(t *testing.T) {
	s := newStore(t)
	put(t, s, "a/b/c", "c")
	put(t, s, "a/", "")
	put(t, s, "top", "t")
	want := []string{"a/", "a/.basin-dir", "a/b/", "a/b/c", "top"}
	if got := tree(t, s.Dir()); !slices.Equal(got, want) {
		t.Errorf("tree = %q, want %q", got, want)
	}
	data, err := os.ReadFile(filepath.Join(s.Dir(), "a/b/c"))
	if err != nil || string(data) != "c" {
		t.Errorf("a/b/c on disk = %q, %v", data, err)
	}
	fi, err := os.Stat(filepath.Join(s.Dir(), "top"))
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("file mode = %v, %v; want 0600", fi.Mode(), err)
	}
	// Deleting prunes the directories left empty, and only those.
	if err := s.Delete(t.Context(), "a/b/c"); err != nil {
		t.Fatal(err)
	}
	if got := tree(t, s.Dir()); !slices.Equal(got, []string{"a/", "a/.basin-dir", "top"}) {
		t.Errorf("tree after Delete(a/b/c) = %q", got)
	}
	if err := s.Delete(t.Context(), "a/"); err != nil {
		t.Fatal(err)
	}
	if got := tree(t, s.Dir()); !slices.Equal(got, []string{"top"}) {
		t.Errorf("tree after Delete(a/) = %q", got)
	}
	if _, err := os.Stat(s.Dir()); err != nil {
		t.Errorf("the root itself went away: %v", err)
	}
}

func TestForeignEntries(t *testing.T) {
	s := newStore(t)
	dir := s.Dir()
	put(t, s, "d/real", "x")
	// Leftovers a crash or a user may leave behind.
	for _, p := range []string{"d/.basin-tmp-123", ".basin-tmp-9", "empty/nested/", "tmponly/.basin-tmp-1", "outside-link-target"} {
		full := filepath.Join(dir, p)
		if strings.HasSuffix(p, "/") {
			if err := os.MkdirAll(full, 0o700); err != nil {
				t.Fatal(err)
			}
			continue
		}
		if err := os.MkdirAll(filepath.Dir(full), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, []byte("junk"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink("real", filepath.Join(dir, "d/link")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("/etc", filepath.Join(dir, "etc")); err != nil {
		t.Fatal(err)
	}
	objects, prefixes := objstoretest.Keys(t, s, objstore.ListOptions{Delimiter: "/"})
	if len(objects) != 1 || objects[0] != "outside-link-target" || !slices.Equal(prefixes, []string{"d/"}) {
		t.Errorf("List(/) = %q, %q; want [outside-link-target], [d/]", objects, prefixes)
	}
	objects, _ = objstoretest.Keys(t, s, objstore.ListOptions{})
	if !slices.Equal(objects, []string{"d/real", "outside-link-target"}) {
		t.Errorf("List = %q", objects)
	}
	for _, c := range []struct {
		key  string
		want error
	}{
		{"d/link", objstore.ErrNotFound},
		{"empty", objstore.ErrNotFound},
		{"d/.basin-tmp-123", objstore.ErrInvalidKey},
		{"etc/passwd", nil}, // any error: the link leads out of the root
	} {
		_, err := s.Stat(t.Context(), c.key)
		if err == nil || c.want != nil && !errors.Is(err, c.want) {
			t.Errorf("Stat(%q) = %v, want %v", c.key, err, c.want)
		}
	}
	if _, err := s.Put(t.Context(), "etc/basin-test", strings.NewReader("x"), objstore.PutOptions{Size: 1}); err == nil {
		t.Error("Put through a link out of the root succeeded")
	}
	if err := s.Delete(t.Context(), "d/link"); err != nil {
		t.Errorf("Delete(d/link): %v", err)
	}
	if _, err := os.Lstat(filepath.Join(dir, "d/link")); err != nil {
		t.Errorf("Delete of a symlink key removed the link: %v", err)
	}
}

func TestNameConflicts(t *testing.T) {
	s := newStore(t)
	put(t, s, "file", "x")
	put(t, s, "dir/x", "x")
	put(t, s, "marked/", "")
	for _, key := range []string{"file/below", "file/", "dir", "marked"} {
		_, err := s.Put(t.Context(), key, strings.NewReader("y"), objstore.PutOptions{Size: 1})
		if !errors.Is(err, objstore.ErrInvalidKey) {
			t.Errorf("Put(%q) = %v, want ErrInvalidKey", key, err)
		}
	}
	_, err := s.Copy(t.Context(), "file", "dir")
	if !errors.Is(err, objstore.ErrInvalidKey) {
		t.Errorf("Copy onto a directory = %v, want ErrInvalidKey", err)
	}
	objects, _ := objstoretest.Keys(t, s, objstore.ListOptions{})
	if !slices.Equal(objects, []string{"dir/x", "file", "marked/"}) {
		t.Errorf("failed puts left objects: %q", objects)
	}
	if got := tree(t, s.Dir()); slices.ContainsFunc(got, func(p string) bool { return strings.Contains(p, ".basin-tmp-") }) {
		t.Errorf("failed puts left temporary files: %q", got)
	}
}

func TestVersionChangesInPlace(t *testing.T) {
	s := newStore(t)
	v1 := put(t, s, "k", "aaaa")
	p := filepath.Join(s.Dir(), "k")
	fi, err := os.Stat(p)
	if err != nil {
		t.Fatal(err)
	}
	// Someone rewrites the file in place, same size, and restores its mtime.
	if err := os.WriteFile(p, []byte("bbbb"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Chtimes(p, time.Time{}, fi.ModTime().Add(time.Nanosecond)); err != nil {
		t.Fatal(err)
	}
	st, err := s.Stat(t.Context(), "k")
	if err != nil || st.Version == v1.Version {
		t.Errorf("Stat after an in-place rewrite = %+v, %v; want a version other than %q", st, err, v1.Version)
	}
	_, _, err = s.Read(t.Context(), "k", objstore.ReadOptions{Length: -1, IfVersion: v1.Version})
	if !errors.Is(err, objstore.ErrPreconditionFailed) {
		t.Errorf("Read(IfVersion old) = %v", err)
	}
}

func TestReadKeepsOpenedVersion(t *testing.T) {
	s := newStore(t)
	put(t, s, "k", "old content")
	rc, info, err := s.Read(t.Context(), "k", objstore.ReadOptions{Length: -1})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = rc.Close() }()
	put(t, s, "k", "new content")
	var buf bytes.Buffer
	if _, err := buf.ReadFrom(rc); err != nil || buf.String() != "old content" {
		t.Errorf("body opened before the overwrite = %q, %v", buf.String(), err)
	}
	if st, _ := s.Stat(t.Context(), "k"); st.Version == info.Version {
		t.Error("overwrite kept the version")
	}
}

// Puts and Deletes racing in one directory: pruning an empty directory
// must never make a concurrent Put fail.
func TestConcurrentPutDeleteSameDir(t *testing.T) {
	s := newStore(t)
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			for i := range 100 {
				key := fmt.Sprintf("x/y/z/g%d-%d", g, i)
				if _, err := s.Put(t.Context(), key, strings.NewReader("v"), objstore.PutOptions{Size: 1}); err != nil {
					t.Errorf("Put(%q): %v", key, err)
					return
				}
				if err := s.Delete(t.Context(), key); err != nil {
					t.Errorf("Delete(%q): %v", key, err)
					return
				}
			}
		})
	}
	wg.Wait()
	if got := tree(t, s.Dir()); len(got) != 0 {
		t.Errorf("tree after all deletes = %q, want empty", got)
	}
}

func TestNew(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "file")
	if err := os.WriteFile(file, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name string
		cfg  objstore.Config
		want error
	}{
		{"ok", objstore.Config{Backend: objstore.BackendFile, Bucket: dir}, nil},
		{"no backend", objstore.Config{Bucket: dir}, nil},
		{"relative", objstore.Config{Bucket: "relative/dir"}, objstore.ErrInvalidConfig},
		{"empty", objstore.Config{Bucket: ""}, objstore.ErrInvalidConfig},
		{"missing", objstore.Config{Bucket: filepath.Join(dir, "missing")}, objstore.ErrNotFound},
		{"a file", objstore.Config{Bucket: file}, objstore.ErrInvalidConfig},
		{"other backend", objstore.Config{Backend: objstore.BackendS3, Bucket: dir}, objstore.ErrInvalidConfig},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s, err := filestore.New(c.cfg)
			if c.want == nil {
				if err != nil {
					t.Fatal(err)
				}
				_ = s.Close()
				return
			}
			if !errors.Is(err, c.want) {
				t.Errorf("New(%+v) = %v, want %v", c.cfg, err, c.want)
			}
		})
	}
}

// An upload in progress is invisible: no temporary name in listings, and
// the old version stays readable until the new one is complete.
func TestUploadInProgressInvisible(t *testing.T) {
	s := newStore(t)
	put(t, s, "d/k", "old")
	pr, pw := io.Pipe()
	done := make(chan error, 1)
	go func() {
		_, err := s.Put(t.Context(), "d/k", pr, objstore.PutOptions{Size: -1})
		done <- err
	}()
	if _, err := pw.Write([]byte("new, half")); err != nil {
		t.Fatal(err)
	}
	if got := tree(t, s.Dir()); len(got) != 3 { // d/, d/k, d/.basin-tmp-…
		t.Fatalf("tree during upload = %q, want a temporary file next to d/k", got)
	}
	objects, _ := objstoretest.Keys(t, s, objstore.ListOptions{})
	if !slices.Equal(objects, []string{"d/k"}) {
		t.Errorf("List during upload = %q", objects)
	}
	if rc, _, err := s.Read(t.Context(), "d/k", objstore.ReadOptions{Length: -1}); err != nil {
		t.Fatal(err)
	} else {
		data, _ := io.ReadAll(rc)
		_ = rc.Close()
		if string(data) != "old" {
			t.Errorf("Read during upload = %q, want the old version", data)
		}
	}
	_ = pw.Close()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if got := tree(t, s.Dir()); !slices.Equal(got, []string{"d/", "d/k"}) {
		t.Errorf("tree after upload = %q", got)
	}
}

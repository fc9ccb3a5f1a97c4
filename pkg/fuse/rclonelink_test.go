package fuse

import (
	"os"
	"path/filepath"
	"slices"
	"syscall"
	"testing"

	"github.com/basin-csi/basin/pkg/mountspec"
	"github.com/basin-csi/basin/pkg/objstore"
)

// dirTypes returns the names of a directory with their types.
func dirTypes(t *testing.T, dir string) map[string]os.FileMode {
	t.Helper()
	entries := must(t, "readdir "+dir, func() ([]os.DirEntry, error) { return os.ReadDir(dir) })
	out := make(map[string]os.FileMode, len(entries))
	for _, e := range entries {
		out[e.Name()] = e.Type()
	}
	return out
}

// wantLink checks that name is a symbolic link to target whose
// destination reads data.
func wantLink(t *testing.T, name, target, data string) {
	t.Helper()
	if fi, err := os.Lstat(name); err != nil || fi.Mode()&os.ModeSymlink == 0 {
		t.Errorf("lstat %s: %v %v, want a symbolic link", name, fi, err)
		return
	}
	if got, err := os.Readlink(name); err != nil || got != target {
		t.Errorf("readlink %s: %q %v, want %q", name, got, err, target)
	}
	if got, err := os.ReadFile(name); err != nil || string(got) != data {
		t.Errorf("read through %s: %q %v, want %q", name, got, err, data)
	}
}

// TestRcloneLinks: with rcloneLinks, NAME.rclonelink objects are links
// NAME (listed, looked up, read after a remount that lost the cache),
// links made, renamed and removed through Basin are such objects, and the
// suffixed names are not files of their own; without the setting they
// are regular files.
func TestRcloneLinks(t *testing.T) {
	on := mountspec.Spec{RcloneLinks: true}
	forEachStore(t, []cacheKind{realCache}, func(t *testing.T, store objstore.Store, _ cacheKind) {
		put(t, store, "hub/blobs/h1", []byte("data"))
		put(t, store, "hub/snapshots/rev/f.rclonelink", []byte("../../blobs/h1"))
		put(t, store, "hub/both", []byte("plain"))
		put(t, store, "hub/both.rclonelink", []byte("blobs/h1"))

		sessionWith(t, store, on, func(dir string) {
			rev := filepath.Join(dir, "hub/snapshots/rev")
			if got := dirTypes(t, rev); len(got) != 1 || got["f"] != os.ModeSymlink {
				t.Errorf("readdir: %v, want only f, a symbolic link", got)
			}
			wantLink(t, filepath.Join(rev, "f"), "../../blobs/h1", "data")
			if _, err := os.Lstat(filepath.Join(rev, "f.rclonelink")); errnoOf(err) != syscall.ENOENT {
				t.Errorf("lstat f.rclonelink: %v, want ENOENT", err)
			}
			if fi, err := os.Lstat(filepath.Join(dir, "hub/both")); err != nil || !fi.Mode().IsRegular() {
				t.Errorf("both (plain object and link object): %v %v, want the regular file", fi, err)
			}

			// Made, renamed and removed through Basin.
			must(t, "symlink", func() (struct{}, error) {
				return struct{}{}, os.Symlink("../../blobs/h1", filepath.Join(rev, "g"))
			})
			wantObject(t, store, "hub/snapshots/rev/g.rclonelink", []byte("../../blobs/h1"))
			wantNoObject(t, store, "hub/snapshots/rev/g")
			if st, err := store.Stat(t.Context(), "hub/snapshots/rev/g.rclonelink"); err != nil || st.Metadata[metaMode] != "" {
				t.Errorf("link object: %v %v, want no mode (a regular file to other tools)", st.Metadata, err)
			}
			wantLink(t, filepath.Join(rev, "g"), "../../blobs/h1", "data")
			must(t, "rename", func() (struct{}, error) {
				return struct{}{}, os.Rename(filepath.Join(rev, "g"), filepath.Join(rev, "h"))
			})
			wantNoObject(t, store, "hub/snapshots/rev/g.rclonelink")
			wantObject(t, store, "hub/snapshots/rev/h.rclonelink", []byte("../../blobs/h1"))
			wantLink(t, filepath.Join(rev, "h"), "../../blobs/h1", "data")
			must(t, "unlink", func() (struct{}, error) { return struct{}{}, os.Remove(filepath.Join(rev, "f")) })
			wantNoObject(t, store, "hub/snapshots/rev/f.rclonelink")
			if got := dirTypes(t, rev); len(got) != 1 || got["h"] != os.ModeSymlink {
				t.Errorf("readdir after rename and unlink: %v, want only h, a symbolic link", got)
			}
			// A file renamed over a link replaces it.
			writeFile(t, filepath.Join(rev, "new"), []byte("n"), os.O_CREATE|os.O_WRONLY)
			must(t, "rename over link", func() (struct{}, error) {
				return struct{}{}, os.Rename(filepath.Join(rev, "new"), filepath.Join(rev, "h"))
			})
			wantNoObject(t, store, "hub/snapshots/rev/h.rclonelink")
			wantObject(t, store, "hub/snapshots/rev/h", []byte("n"))
			must(t, "symlink h", func() (struct{}, error) {
				return struct{}{}, os.Symlink("h", filepath.Join(rev, "k"))
			})
			if err := os.Symlink("x", filepath.Join(rev, "k")); errnoOf(err) != syscall.EEXIST {
				t.Errorf("symlink over a link: %v, want EEXIST", err)
			}
			// A suffixed name is no file of its own.
			if err := os.Symlink("x", filepath.Join(rev, "m.rclonelink")); errnoOf(err) != syscall.EINVAL {
				t.Errorf("symlink m.rclonelink: %v, want EINVAL", err)
			}
			if err := os.WriteFile(filepath.Join(rev, "m.rclonelink"), nil, 0o644); errnoOf(err) != syscall.EINVAL {
				t.Errorf("create m.rclonelink: %v, want EINVAL", err)
			}
		})

		// A remount that lost the cache reads the links from the bucket.
		sessionWith(t, store, on, func(dir string) {
			rev := filepath.Join(dir, "hub/snapshots/rev")
			wantLink(t, filepath.Join(rev, "k"), "h", "n")
			if got := dirTypes(t, rev); got["k"] != os.ModeSymlink || !got["h"].IsRegular() || len(got) != 2 {
				t.Errorf("readdir after remount: %v, want k a link and h a file", got)
			}
		})

		// Without the setting they are regular files.
		session(t, store, func(dir string) {
			rev := filepath.Join(dir, "hub/snapshots/rev")
			got := dirTypes(t, rev)
			names := make([]string, 0, len(got))
			for n := range got {
				names = append(names, n)
			}
			slices.Sort(names)
			if !slices.Equal(names, []string{"h", "k.rclonelink"}) || !got["k.rclonelink"].IsRegular() {
				t.Errorf("readdir without rcloneLinks: %v, want h and the regular file k.rclonelink", got)
			}
			if b, err := os.ReadFile(filepath.Join(rev, "k.rclonelink")); err != nil || string(b) != "h" {
				t.Errorf("read k.rclonelink: %q %v, want the target", b, err)
			}
		})
	})
}

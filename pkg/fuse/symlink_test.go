package fuse

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/basin-csi/basin/internal/testserver"
	"github.com/basin-csi/basin/pkg/objstore"
)

// hfTree writes a Hugging Face hub–style snapshot under root: blobs by
// hash and snapshots/<rev>/ of relative links into them, one of them into
// a subdirectory, plus an absolute link and a link to a directory.
func hfTree(t *testing.T, root string) map[string]string {
	t.Helper()
	files := map[string]string{
		"snapshots/r1/config.json":         `{"a":1}`,
		"snapshots/r1/weights/model.bin":   "weights",
		"snapshots/r1/tokenizer/vocab.txt": "vocab",
	}
	do := func(what string, fn func() error) {
		t.Helper()
		must(t, what, func() (struct{}, error) { return struct{}{}, fn() })
	}
	i := 0
	for rel, content := range files {
		i++
		blob := filepath.Join("blobs", "hash"+string(rune('a'+i)))
		do("mkdir", func() error { return os.MkdirAll(filepath.Join(root, "blobs"), 0o755) })
		do("write blob", func() error { return os.WriteFile(filepath.Join(root, blob), []byte(content), 0o644) })
		link := filepath.Join(root, rel)
		do("mkdir", func() error { return os.MkdirAll(filepath.Dir(link), 0o755) })
		target, err := filepath.Rel(filepath.Dir(link), filepath.Join(root, blob))
		if err != nil {
			t.Fatal(err)
		}
		do("symlink", func() error { return os.Symlink(target, link) })
	}
	do("dir link", func() error { return os.Symlink("snapshots/r1", filepath.Join(root, "latest")) })
	return files
}

// checkTree reads files through their links, and the directory link.
func checkTree(t *testing.T, root string, files map[string]string) {
	t.Helper()
	for rel, want := range files {
		fi := must(t, "lstat", func() (os.FileInfo, error) { return os.Lstat(filepath.Join(root, rel)) })
		if fi.Mode()&os.ModeSymlink == 0 {
			t.Errorf("%s: mode %v, want a symbolic link", rel, fi.Mode())
		}
		target := must(t, "readlink", func() (string, error) { return os.Readlink(filepath.Join(root, rel)) })
		if filepath.IsAbs(target) || filepath.Base(filepath.Dir(filepath.Join(filepath.Dir(rel), target))) != "blobs" {
			t.Errorf("%s -> %s, want a relative link into blobs/", rel, target)
		}
		got := must(t, "read "+rel, func() ([]byte, error) { return os.ReadFile(filepath.Join(root, rel)) })
		if string(got) != want {
			t.Errorf("%s reads %q, want %q", rel, got, want)
		}
		via := must(t, "read via latest", func() ([]byte, error) {
			return os.ReadFile(filepath.Join(root, "latest", rel[len("snapshots/r1/"):]))
		})
		if string(via) != want {
			t.Errorf("latest/%s reads %q, want %q", rel[len("snapshots/r1/"):], via, want)
		}
	}
	entries := must(t, "readdir", func() ([]os.DirEntry, error) { return os.ReadDir(filepath.Join(root, "snapshots/r1")) })
	for _, e := range entries {
		if e.Name() == "config.json" && e.Type()&os.ModeSymlink == 0 {
			t.Errorf("readdir: config.json has type %v, want a symbolic link", e.Type())
		}
	}
}

// TestSymlinks: relative, absolute and directory links written through
// Basin behave as on a local file system, within the mount and after a
// remount that lost the cache; the objects carry s3fs's and gcsfuse's
// link markers.
func TestSymlinks(t *testing.T) {
	forEachStoreOf(t, namespaceStores, []cacheKind{realCache}, func(t *testing.T, store objstore.Store, _ cacheKind) {
		var files map[string]string
		session(t, store, func(dir string) {
			files = hfTree(t, filepath.Join(dir, "hub"))
			checkTree(t, filepath.Join(dir, "hub"), files)
			must(t, "write", func() (struct{}, error) {
				return struct{}{}, os.WriteFile(filepath.Join(dir, "plain"), []byte("p"), 0o644)
			})
			must(t, "abs link", func() (struct{}, error) {
				return struct{}{}, os.Symlink("/etc/hostname", filepath.Join(dir, "abs"))
			})
			if err := os.Symlink("x", filepath.Join(dir, "plain")); errnoOf(err) != syscall.EEXIST {
				t.Errorf("symlink over a file: %v, want EEXIST", err)
			}
		})
		st, err := store.Stat(t.Context(), "hub/snapshots/r1/config.json")
		if err != nil {
			t.Fatal(err)
		}
		if st.Metadata[metaMode] != "41471" || st.Metadata[metaGcsfuseTarget] != "../../blobs/hashb" && st.Metadata[metaGcsfuseTarget] == "" {
			t.Errorf("link object metadata %v, want mode 41471 (S_IFLNK|0777) and gcsfuse_symlink_target", st.Metadata)
		}
		session(t, store, func(dir string) {
			checkTree(t, filepath.Join(dir, "hub"), files)
			if target, err := os.Readlink(filepath.Join(dir, "abs")); err != nil || target != "/etc/hostname" {
				t.Errorf("abs -> %q %v, want /etc/hostname", target, err)
			}
			if fi, err := os.Lstat(filepath.Join(dir, "plain")); err != nil || !fi.Mode().IsRegular() {
				t.Errorf("plain: %v %v, want a regular file", fi, err)
			}
			// Renamed and removed like files.
			must(t, "rename link", func() (struct{}, error) {
				return struct{}{}, os.Rename(filepath.Join(dir, "hub/latest"), filepath.Join(dir, "hub/current"))
			})
			if got, err := os.ReadFile(filepath.Join(dir, "hub/current/config.json")); err != nil || string(got) != `{"a":1}` {
				t.Errorf("through the renamed link: %q %v", got, err)
			}
			must(t, "unlink link", func() (struct{}, error) { return struct{}{}, os.Remove(filepath.Join(dir, "abs")) })
			if _, err := os.Lstat(filepath.Join(dir, "abs")); !os.IsNotExist(err) {
				t.Errorf("removed link: %v", err)
			}
		})
	})
}

// TestPythonVenv: python -m venv in a Basin volume works, and the
// environment runs after a remount (its bin/python is a link).
func TestPythonVenv(t *testing.T) {
	if _, err := os.Stat("/usr/bin/python3"); err != nil {
		testserver.Unavailable(t, "no /usr/bin/python3")
	}
	forEachStore(t, []cacheKind{realCache}, func(t *testing.T, store objstore.Store, _ cacheKind) {
		session(t, store, func(dir string) {
			run(t, dir, "/usr/bin/python3", "-m", "venv", "--without-pip", "env")
			if out := run(t, dir, "env/bin/python", "-c", "import sys; print(sys.prefix != sys.base_prefix)"); out != "True\n" {
				t.Errorf("venv python says %q", out)
			}
		})
		session(t, store, func(dir string) {
			if out := run(t, dir, "env/bin/python", "-c", "import sys; print(sys.prefix != sys.base_prefix)"); out != "True\n" {
				t.Errorf("venv python after a remount says %q", out)
			}
		})
	})
}

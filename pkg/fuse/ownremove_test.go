package fuse

import (
	"github.com/basin-csi/basin/pkg/mountspec"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/basin-csi/basin/pkg/objstore"
)

// TestOwnRemovalSeenAtOnce: a name this mount removed — a file, a
// directory it made, a tree, the source of a rename — can be created
// again at once as the other kind, though the metadata TTL (an hour here)
// would still answer the old state. With the parent's listing cached
// (listed first) and without.
func TestOwnRemovalSeenAtOnce(t *testing.T) {
	forEachStoreOf(t, namespaceStores, []cacheKind{realCache}, func(t *testing.T, store objstore.Store, _ cacheKind) {
		m := mountStore(t, store, mountSpec{cfg: Config{Spec: mountspec.Spec{MetadataTTL: time.Hour, NegativeMetadataTTL: time.Hour}}})
		do := func(what string, fn func() error) {
			t.Helper()
			must(t, what, func() (struct{}, error) { return struct{}{}, fn() })
		}
		write := func(rel, data string) func() error {
			return func() error { return os.WriteFile(path(m, rel), []byte(data), 0o644) }
		}
		mkdir := func(rel string) func() error { return func() error { return os.MkdirAll(path(m, rel), 0o755) } }
		isFile := func(rel, want string) {
			t.Helper()
			got := must(t, "read "+rel, func() ([]byte, error) { return os.ReadFile(path(m, rel)) })
			if string(got) != want {
				t.Errorf("%s = %q, want %q", rel, got, want)
			}
		}
		isDir := func(rel string) {
			t.Helper()
			fi := must(t, "stat "+rel, func() (os.FileInfo, error) { return os.Stat(path(m, rel)) })
			if !fi.IsDir() {
				t.Errorf("%s is %v, want a directory", rel, fi.Mode())
			}
		}
		gone := func(rel string) {
			t.Helper()
			if fi, err := within(t, "stat", func() (os.FileInfo, error) { return os.Lstat(path(m, rel)) }); !os.IsNotExist(err) {
				t.Errorf("stat %s: %v %v, want ENOENT", rel, fi.Mode(), err)
			}
		}
		for _, listed := range []bool{false, true} {
			base := "fresh"
			if listed {
				base = "listed"
			}
			p := func(rel string) string { return filepath.Join(base, rel) }
			do("mkdir base", mkdir(base))
			list := func() {
				if listed {
					must(t, "readdir", func() ([]os.DirEntry, error) { return os.ReadDir(path(m, base)) })
				}
			}
			t.Run(base+"/dir", func(t *testing.T) {
				do("mkdir", mkdir(p("d")))
				list()
				do("rmdir", func() error { return os.Remove(path(m, p("d"))) })
				gone(p("d"))
				do("write where the directory was", write(p("d"), "x"))
				isFile(p("d"), "x")
			})
			t.Run(base+"/file", func(t *testing.T) {
				do("write", write(p("f"), "f"))
				list()
				do("unlink", func() error { return os.Remove(path(m, p("f"))) })
				gone(p("f"))
				do("mkdir where the file was", mkdir(p("f")))
				isDir(p("f"))
			})
			t.Run(base+"/tree", func(t *testing.T) {
				do("mkdir", mkdir(p("t/a/b")))
				do("write", write(p("t/a/b/f"), "f"))
				do("write", write(p("t/g"), "g"))
				list()
				must(t, "readdir", func() ([]os.DirEntry, error) { return os.ReadDir(path(m, p("t/a"))) })
				do("rm -rf", func() error { return os.RemoveAll(path(m, p("t"))) })
				gone(p("t"))
				do("write where the tree was", write(p("t"), "x"))
				isFile(p("t"), "x")
			})
			t.Run(base+"/rename-file", func(t *testing.T) {
				do("write", write(p("rf"), "r"))
				list()
				do("rename", func() error { return os.Rename(path(m, p("rf")), path(m, p("rf2"))) })
				gone(p("rf"))
				do("mkdir where the source was", mkdir(p("rf")))
				isDir(p("rf"))
				isFile(p("rf2"), "r")
			})
			t.Run(base+"/rename-dir", func(t *testing.T) {
				do("mkdir", mkdir(p("rd/sub")))
				do("write", write(p("rd/sub/f"), "r"))
				list()
				do("rename", func() error { return os.Rename(path(m, p("rd")), path(m, p("rd2"))) })
				gone(p("rd"))
				do("write where the source was", write(p("rd"), "x"))
				isFile(p("rd"), "x")
				isFile(p("rd2/sub/f"), "r")
			})
		}
	})
}

package fuse

import (
	"context"
	"github.com/basin-csi/basin/pkg/mountspec"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/basin-csi/basin/internal/testserver"
	"github.com/basin-csi/basin/pkg/objstore"
)

// session mounts store with a fresh cache, runs fn on the mount and
// unmounts: two sessions in a row are a remount that lost the cache.
func session(t *testing.T, store objstore.Store, fn func(dir string)) {
	t.Helper()
	sessionWith(t, store, mountspec.Spec{}, fn)
}

// sessionWith is session with the settings of spec (its TTLs are a
// minute).
func sessionWith(t *testing.T, store objstore.Store, spec mountspec.Spec, fn func(dir string)) {
	t.Helper()
	testserver.RequireFUSE(t)
	spec.MetadataTTL, spec.NegativeMetadataTTL = time.Minute, time.Minute
	cfg := Config{Spec: spec}
	fsys, err := newFS(cfg, store, newBackend(t, store, mountSpec{cfg: cfg}))
	if err != nil {
		t.Fatal(err)
	}
	tm, unmount := mountFSUntil(t, fsys)
	defer unmount()
	fn(tm.dir)
}

// run runs a command in dir with a timeout and fails the test on error.
//
// /bin/sh changes to dir and execs the command, never this process's
// child itself: os/exec forks with vfork, which stops the forking thread,
// holding its P and syscall.ForkLock, until the child execs. A child that
// looked up a path on a mount this process serves (its directory, the
// program) would wait on the file system while the file system waits on
// that thread (the next garbage collection's stop, or the lock), for ever.
func run(t *testing.T, dir string, name string, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 2*syscallTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, "/bin/sh", append([]string{"-c", `cd "$0" && exec "$@"`, dir, name}, args...)...)
	cmd.Dir = "/"
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%s %v: %v\n%s", name, args, err, out)
	}
	return string(out)
}

// TestModesAndTimesSurviveRemount: a script written, chmod +x'ed and run
// through Basin runs again after a remount; touch -d sets an mtime that
// survives it; a file created executable keeps its mode; the object
// metadata follows s3fs's and rclone's conventions; and a metadata change
// does not upload the content again.
func TestModesAndTimesSurviveRemount(t *testing.T) {
	forEachStoreOf(t, namespaceStores, []cacheKind{realCache}, func(t *testing.T, store objstore.Store, _ cacheKind) {
		want := time.Date(2020, 1, 1, 0, 0, 0, 0, time.UTC)
		session(t, store, func(dir string) {
			script := filepath.Join(dir, "bin", "hello.sh")
			must(t, "mkdir", func() (struct{}, error) { return struct{}{}, os.MkdirAll(filepath.Dir(script), 0o755) })
			must(t, "write", func() (struct{}, error) {
				return struct{}{}, os.WriteFile(script, []byte("#!/bin/sh\necho hello\n"), 0o644)
			})
			must(t, "chmod", func() (struct{}, error) { return struct{}{}, os.Chmod(script, 0o755) })
			if fi := must(t, "stat", func() (os.FileInfo, error) { return os.Stat(script) }); fi.Mode().Perm() != 0o755 {
				t.Errorf("after chmod: %v, want 0755", fi.Mode())
			}
			if out := run(t, dir, script); out != "hello\n" {
				t.Errorf("script printed %q", out)
			}
			run(t, dir, "touch", "-d", "2020-01-01T00:00:00Z", "old.txt")
			run(t, dir, "touch", "-d", "2020-01-01T00:00:00Z", "bin/hello.sh")
			must(t, "create 0755", func() (struct{}, error) {
				return struct{}{}, os.WriteFile(filepath.Join(dir, "made-exec"), []byte("#!/bin/sh\necho made\n"), 0o755)
			})
			// An exclusive create claims the name at open, with its mode;
			// closed unwritten, that claim is the file.
			must(t, "create 0755 exclusive", func() (struct{}, error) {
				f, err := os.OpenFile(filepath.Join(dir, "made-excl"), os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o755)
				if err != nil {
					return struct{}{}, err
				}
				return struct{}{}, f.Close()
			})
		})
		st, err := store.Stat(t.Context(), "bin/hello.sh")
		if err != nil {
			t.Fatal(err)
		}
		if st.Metadata[metaMode] != strconv.Itoa(syscall.S_IFREG|0o755) {
			t.Errorf("x-amz-meta-mode = %q, want %d (s3fs: decimal st_mode)", st.Metadata[metaMode], syscall.S_IFREG|0o755)
		}
		if st.Metadata[metaMtime] != "1577836800" {
			t.Errorf("x-amz-meta-mtime = %q, want 1577836800 (s3fs, rclone: epoch seconds)", st.Metadata[metaMtime])
		}
		if st.Metadata[metaGcsfuseMtime] != "2020-01-01T00:00:00Z" {
			t.Errorf("gcsfuse_mtime = %q, want 2020-01-01T00:00:00Z", st.Metadata[metaGcsfuseMtime])
		}
		session(t, store, func(dir string) {
			for _, name := range []string{"bin/hello.sh", "made-exec", "made-excl"} {
				fi := must(t, "stat", func() (os.FileInfo, error) { return os.Stat(filepath.Join(dir, name)) })
				if fi.Mode().Perm() != 0o755 {
					t.Errorf("%s after a remount: mode %v, want 0755", name, fi.Mode())
				}
			}
			if out := run(t, dir, filepath.Join(dir, "bin/hello.sh")); out != "hello\n" {
				t.Errorf("script after a remount printed %q", out)
			}
			for _, name := range []string{"old.txt", "bin/hello.sh"} {
				fi := must(t, "stat", func() (os.FileInfo, error) { return os.Stat(filepath.Join(dir, name)) })
				if !fi.ModTime().Equal(want) {
					t.Errorf("%s after a remount: mtime %v, want %v", name, fi.ModTime(), want)
				}
			}
			// ls -l (a listing) shows the same.
			entries := must(t, "readdir", func() ([]os.DirEntry, error) { return os.ReadDir(filepath.Join(dir, "bin")) })
			if len(entries) != 1 {
				t.Fatalf("bin lists %d entries", len(entries))
			}
			if fi, err := entries[0].Info(); err != nil || fi.Mode().Perm() != 0o755 {
				t.Errorf("listed hello.sh: %v %v, want 0755", fi.Mode(), err)
			}
		})
	})
}

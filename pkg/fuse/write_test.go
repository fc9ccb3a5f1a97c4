package fuse

import (
	"bytes"
	"errors"
	"github.com/basin-csi/basin/pkg/mountspec"
	"io"
	"os"
	"syscall"
	"testing"
	"time"

	"github.com/basin-csi/basin/pkg/objstore"
)

// objectBytes reads key directly from the bucket.
func objectBytes(t testing.TB, s objstore.Store, key string) ([]byte, error) {
	t.Helper()
	body, _, err := s.Read(t.Context(), key, objstore.ReadOptions{Length: -1})
	if err != nil {
		return nil, err
	}
	defer func() { _ = body.Close() }()
	return io.ReadAll(body)
}

// wantObject fails unless key holds want in the bucket.
func wantObject(t testing.TB, s objstore.Store, key string, want []byte) {
	t.Helper()
	got, err := objectBytes(t, s, key)
	if err != nil {
		t.Errorf("object %s: %v", key, err)
		return
	}
	if !bytes.Equal(got, want) {
		t.Errorf("object %s: %d bytes (%.20q), want %d (%.20q)", key, len(got), got, len(want), want)
	}
}

// wantNoObject fails unless key is absent from the bucket.
func wantNoObject(t testing.TB, s objstore.Store, key string) {
	t.Helper()
	if _, err := s.Stat(t.Context(), key); !errors.Is(err, objstore.ErrNotFound) {
		t.Errorf("object %s: Stat error %v, want not found", key, err)
	}
}

func writeFile(t testing.TB, name string, data []byte, flag int) {
	t.Helper()
	must(t, "write "+name, func() (int, error) {
		f, err := os.OpenFile(name, flag, 0o644)
		if err != nil {
			return 0, err
		}
		n, err := f.Write(data)
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		return n, err
	})
}

func TestWrite(t *testing.T) {
	forEachStore(t, []cacheKind{realCache, fakeLocal}, func(t *testing.T, store objstore.Store, kind cacheKind) {
		m := mountStore(t, store, mountSpec{cache: kind})
		big := randomBytes(12<<20+3, 7) // multipart on MinIO (5 MiB parts)

		t.Run("create close", func(t *testing.T) {
			writeFile(t, path(m, "new.bin"), big, os.O_CREATE|os.O_WRONLY|os.O_EXCL)
			wantObject(t, store, "new.bin", big)
			got := must(t, "read back", func() ([]byte, error) { return os.ReadFile(path(m, "new.bin")) })
			if !bytes.Equal(got, big) {
				t.Errorf("read back differs")
			}
			writeFile(t, path(m, "empty"), nil, os.O_CREATE|os.O_WRONLY)
			wantObject(t, store, "empty", nil)
		})
		t.Run("fsync uploads", func(t *testing.T) {
			f := must(t, "create", func() (*os.File, error) { return os.Create(path(m, "synced")) })
			defer func() { _ = f.Close() }()
			must(t, "write", func() (int, error) { return f.Write([]byte("part one")) })
			must(t, "fsync", func() (struct{}, error) { return struct{}{}, f.Sync() })
			wantObject(t, store, "synced", []byte("part one"))
			must(t, "write", func() (int, error) { return f.Write([]byte(", two")) })
			must(t, "close", func() (struct{}, error) { return struct{}{}, f.Close() })
			wantObject(t, store, "synced", []byte("part one, two"))
		})
		t.Run("overwrite", func(t *testing.T) {
			put(t, store, "o", []byte("0123456789"))
			writeFile(t, path(m, "o"), []byte("abc"), os.O_WRONLY|os.O_TRUNC)
			wantObject(t, store, "o", []byte("abc"))
			// In place, without O_TRUNC: copy-down then patch.
			must(t, "pwrite", func() (int, error) {
				f, err := os.OpenFile(path(m, "o"), os.O_RDWR, 0)
				if err != nil {
					return 0, err
				}
				defer func() { _ = f.Close() }()
				return f.WriteAt([]byte("XY"), 1)
			})
			wantObject(t, store, "o", []byte("aXY"))
			writeFile(t, path(m, "o"), []byte("++"), os.O_WRONLY|os.O_APPEND)
			wantObject(t, store, "o", []byte("aXY++"))
			got := must(t, "read", func() ([]byte, error) { return os.ReadFile(path(m, "o")) })
			if string(got) != "aXY++" {
				t.Errorf("read after writes = %q", got)
			}
		})
		t.Run("truncate", func(t *testing.T) {
			put(t, store, "tr", []byte("hello world"))
			must(t, "truncate", func() (struct{}, error) { return struct{}{}, os.Truncate(path(m, "tr"), 5) })
			wantObject(t, store, "tr", []byte("hello"))
			must(t, "truncate up", func() (struct{}, error) { return struct{}{}, os.Truncate(path(m, "tr"), 7) })
			wantObject(t, store, "tr", []byte("hello\x00\x00"))
			must(t, "truncate 0", func() (struct{}, error) { return struct{}{}, os.Truncate(path(m, "tr"), 0) })
			wantObject(t, store, "tr", nil)
		})
		t.Run("unlink", func(t *testing.T) {
			put(t, store, "gone", []byte("x"))
			must(t, "stat", func() (os.FileInfo, error) { return os.Stat(path(m, "gone")) })
			must(t, "remove", func() (struct{}, error) { return struct{}{}, os.Remove(path(m, "gone")) })
			wantNoObject(t, store, "gone")
			if _, err := within(t, "stat", func() (os.FileInfo, error) { return os.Stat(path(m, "gone")) }); errnoOf(err) != syscall.ENOENT {
				t.Errorf("stat after unlink: %v", err)
			}
		})
		t.Run("mkdir rmdir", func(t *testing.T) {
			must(t, "mkdir", func() (struct{}, error) { return struct{}{}, os.Mkdir(path(m, "d"), 0o755) })
			wantObject(t, store, "d/", nil)
			writeFile(t, path(m, "d/f"), []byte("f"), os.O_CREATE|os.O_WRONLY)
			_, err := within(t, "rmdir", func() (struct{}, error) { return struct{}{}, syscall.Rmdir(path(m, "d")) })
			if errnoOf(err) != syscall.ENOTEMPTY {
				t.Errorf("rmdir of a non-empty directory: %v, want ENOTEMPTY", err)
			}
			must(t, "rm", func() (struct{}, error) { return struct{}{}, os.Remove(path(m, "d/f")) })
			must(t, "rmdir", func() (struct{}, error) { return struct{}{}, syscall.Rmdir(path(m, "d")) })
			wantNoObject(t, store, "d/")
			if _, err := within(t, "stat", func() (os.FileInfo, error) { return os.Stat(path(m, "d")) }); errnoOf(err) != syscall.ENOENT {
				t.Errorf("stat after rmdir: %v", err)
			}
		})
		t.Run("rename file", func(t *testing.T) {
			put(t, store, "src", []byte("moving"))
			must(t, "mkdir", func() (struct{}, error) { return struct{}{}, os.Mkdir(path(m, "to"), 0o755) })
			must(t, "rename", func() (struct{}, error) { return struct{}{}, os.Rename(path(m, "src"), path(m, "to/dst")) })
			wantObject(t, store, "to/dst", []byte("moving"))
			wantNoObject(t, store, "src")
			got := must(t, "read", func() ([]byte, error) { return os.ReadFile(path(m, "to/dst")) })
			if string(got) != "moving" {
				t.Errorf("read renamed = %q", got)
			}
			// Over an existing file.
			put(t, store, "src2", []byte("second"))
			must(t, "rename over", func() (struct{}, error) { return struct{}{}, os.Rename(path(m, "src2"), path(m, "to/dst")) })
			wantObject(t, store, "to/dst", []byte("second"))
			got = must(t, "read", func() ([]byte, error) { return os.ReadFile(path(m, "to/dst")) })
			if string(got) != "second" {
				t.Errorf("read renamed over = %q", got)
			}
		})
		t.Run("recreate after rename", func(t *testing.T) {
			// The moved file keeps its inode; a new file under the old
			// name must be another inode, not an alias of the moved one.
			put(t, store, "re/a", []byte("first"))
			var st1 syscall.Stat_t
			must(t, "stat", func() (struct{}, error) { return struct{}{}, syscall.Stat(path(m, "re/a"), &st1) })
			must(t, "rename", func() (struct{}, error) { return struct{}{}, os.Rename(path(m, "re/a"), path(m, "re/b")) })
			writeFile(t, path(m, "re/a"), []byte("second"), os.O_CREATE|os.O_WRONLY|os.O_EXCL)
			var sa, sb syscall.Stat_t
			must(t, "stat a", func() (struct{}, error) { return struct{}{}, syscall.Stat(path(m, "re/a"), &sa) })
			must(t, "stat b", func() (struct{}, error) { return struct{}{}, syscall.Stat(path(m, "re/b"), &sb) })
			if sb.Ino != st1.Ino || sa.Ino == sb.Ino {
				t.Errorf("inodes: a was %d; now a %d, b %d: want b to keep it and a to get another", st1.Ino, sa.Ino, sb.Ino)
			}
			for k, want := range map[string]string{"re/a": "second", "re/b": "first"} {
				got := must(t, "read", func() ([]byte, error) { return os.ReadFile(path(m, k)) })
				if string(got) != want {
					t.Errorf("%s = %q, want %q", k, got, want)
				}
			}
		})
		t.Run("rename directory", func(t *testing.T) {
			for _, k := range []string{"tree/a", "tree/sub/b", "tree/sub/deeper/c"} {
				put(t, store, k, []byte(k))
			}
			must(t, "readdir", func() ([]os.DirEntry, error) { return os.ReadDir(path(m, "tree/sub")) })
			must(t, "rename", func() (struct{}, error) { return struct{}{}, os.Rename(path(m, "tree"), path(m, "moved")) })
			for _, k := range []string{"a", "sub/b", "sub/deeper/c"} {
				wantObject(t, store, "moved/"+k, []byte("tree/"+k))
				wantNoObject(t, store, "tree/"+k)
				got := must(t, "read", func() ([]byte, error) { return os.ReadFile(path(m, "moved/"+k)) })
				if string(got) != "tree/"+k {
					t.Errorf("moved/%s = %q", k, got)
				}
			}
			if _, err := within(t, "stat", func() (os.FileInfo, error) { return os.Stat(path(m, "tree")) }); errnoOf(err) != syscall.ENOENT {
				t.Errorf("stat old directory: %v", err)
			}
		})
	})
}

// TestCreateOverStaleNegativeEntry: O_CREAT without O_TRUNC on an object
// the kernel believed missing keeps its content (the bucket is asked);
// O_EXCL asks the bucket too (a conditional create): it fails with EEXIST,
// leaves the object alone, and the name is found at once afterwards
// (the stale negative entries are dropped).
func TestCreateOverStaleNegativeEntry(t *testing.T) {
	store, _ := newFileStore(t)
	m := mountStore(t, store, mountSpec{cfg: Config{Spec: mountspec.Spec{NegativeMetadataTTL: time.Hour}}})
	for _, name := range []string{"x", "y"} {
		if _, err := within(t, "stat", func() (os.FileInfo, error) { return os.Stat(path(m, name)) }); errnoOf(err) != syscall.ENOENT {
			t.Fatalf("stat %s: %v", name, err)
		}
		put(t, store, name, []byte("0123456789"))
	}
	must(t, "create", func() (int, error) {
		f, err := os.OpenFile(path(m, "x"), os.O_CREATE|os.O_WRONLY, 0o644)
		if err != nil {
			return 0, err
		}
		defer func() { _ = f.Close() }()
		return f.Write([]byte("ab"))
	})
	wantObject(t, store, "x", []byte("ab23456789"))
	_, err := within(t, "create excl", func() (*os.File, error) {
		return os.OpenFile(path(m, "y"), os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o644)
	})
	if errnoOf(err) != syscall.EEXIST {
		t.Fatalf("O_EXCL over an object the mount believed missing: %v, want EEXIST", err)
	}
	wantObject(t, store, "y", []byte("0123456789"))
	deadline := time.Now().Add(5 * time.Second) // the kernel's entry goes once CREATE is answered
	for {
		got, err := within(t, "read", func() ([]byte, error) { return os.ReadFile(path(m, "y")) })
		if err == nil && string(got) == "0123456789" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("after EEXIST, reading y: %q, %v", got, err)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func TestReadOnly(t *testing.T) {
	store, _ := newFileStore(t)
	put(t, store, "f", []byte("data"))
	put(t, store, "d/x", []byte("x"))
	m := mountStore(t, store, mountSpec{cfg: Config{Spec: mountspec.Spec{ReadOnly: true}}})
	got := must(t, "read", func() ([]byte, error) { return os.ReadFile(path(m, "f")) })
	if string(got) != "data" {
		t.Fatalf("read = %q", got)
	}
	for name, op := range map[string]func() error{
		"create":   func() error { return os.WriteFile(path(m, "new"), nil, 0o644) },
		"open rw":  func() error { f, err := os.OpenFile(path(m, "f"), os.O_RDWR, 0); _ = f.Close(); return err },
		"truncate": func() error { return os.Truncate(path(m, "f"), 1) },
		"unlink":   func() error { return os.Remove(path(m, "f")) },
		"mkdir":    func() error { return os.Mkdir(path(m, "nd"), 0o755) },
		"rmdir":    func() error { return syscall.Rmdir(path(m, "d")) },
		"rename":   func() error { return os.Rename(path(m, "f"), path(m, "g")) },
		"chmod":    func() error { return os.Chmod(path(m, "f"), 0o600) },
	} {
		if _, err := within(t, name, func() (struct{}, error) { return struct{}{}, op() }); errnoOf(err) != syscall.EROFS {
			t.Errorf("%s: %v, want EROFS", name, err)
		}
	}
	wantObject(t, store, "f", []byte("data"))
}

// TestFsyncReadersAndDirectories: fsync of a read-only descriptor and of a
// directory succeed (tools fsync directories after a rename).
func TestFsyncReadersAndDirectories(t *testing.T) {
	store, _ := newFileStore(t)
	put(t, store, "d/f", []byte("x"))
	m := mountStore(t, store, mountSpec{})
	for _, name := range []string{"d/f", "d", ""} {
		must(t, "fsync "+name, func() (struct{}, error) {
			f, err := os.Open(path(m, name))
			if err != nil {
				return struct{}{}, err
			}
			defer func() { _ = f.Close() }()
			return struct{}{}, f.Sync()
		})
	}
}

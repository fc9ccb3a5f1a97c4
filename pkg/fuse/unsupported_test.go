package fuse

import (
	"github.com/basin-csi/basin/pkg/mountspec"
	"os"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"
)

// TestUnsupportedErrno: link(2) and mknod(2) of special files fail with
// EPERM, as POSIX prescribes for a file system without them; mknod of a
// regular file makes an empty one; a read-only volume says EROFS.
func TestUnsupportedErrno(t *testing.T) {
	store, _ := newFileStore(t)
	put(t, store, "f", []byte("data"))
	put(t, store, "g", []byte("other"))
	m := mountStore(t, store, mountSpec{})
	ro := mountStore(t, store, mountSpec{cfg: Config{Spec: mountspec.Spec{ReadOnly: true}}})
	call := func(fn func() error) error {
		_, err := within(t, "syscall", func() (struct{}, error) { return struct{}{}, fn() })
		return err
	}
	for _, tc := range []struct {
		name string
		call func(dir string) error
		want syscall.Errno
	}{
		{"link", func(dir string) error { return unix.Link(dir+"/f", dir+"/hard") }, syscall.EPERM},
		{"mkfifo", func(dir string) error { return unix.Mkfifo(dir+"/fifo", 0o644) }, syscall.EPERM},
		{"mknod char device", func(dir string) error { return unix.Mknod(dir+"/dev", unix.S_IFCHR|0o644, int(unix.Mkdev(1, 3))) }, syscall.EPERM},
		{"mknod socket", func(dir string) error { return unix.Mknod(dir+"/sock", unix.S_IFSOCK|0o644, 0) }, syscall.EPERM},
		{"rename exchange", func(dir string) error {
			return unix.Renameat2(unix.AT_FDCWD, dir+"/f", unix.AT_FDCWD, dir+"/g", unix.RENAME_EXCHANGE)
		}, syscall.EINVAL},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := errnoOf(call(func() error { return tc.call(m.dir) })); got != tc.want {
				t.Errorf("%s = %v, want %v", tc.name, got, tc.want)
			}
			if got := errnoOf(call(func() error { return tc.call(ro.dir) })); got != syscall.EROFS {
				t.Errorf("%s on a read-only volume = %v, want EROFS", tc.name, got)
			}
		})
	}
	t.Run("mknod regular", func(t *testing.T) {
		if err := call(func() error { return unix.Mknod(path(m, "reg"), unix.S_IFREG|0o644, 0) }); err != nil {
			t.Fatalf("mknod S_IFREG: %v", err)
		}
		fi := must(t, "stat", func() (os.FileInfo, error) { return os.Stat(path(m, "reg")) })
		if !fi.Mode().IsRegular() || fi.Size() != 0 {
			t.Errorf("reg: %v, %d bytes; want an empty regular file", fi.Mode(), fi.Size())
		}
		if got := errnoOf(call(func() error { return unix.Mknod(path(m, "f"), unix.S_IFREG|0o644, 0) })); got != syscall.EEXIST {
			t.Errorf("mknod over an existing file = %v, want EEXIST", got)
		}
	})
}

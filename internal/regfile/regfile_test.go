package regfile

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"testing"

	"golang.org/x/sys/unix"
)

func TestOpen(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "f")
	f, err := Open(path, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteAt([]byte("hello"), 0); err != nil {
		t.Fatal(err)
	}
	fi, err := f.Stat()
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != 0o600 || fi.Size() != 5 {
		t.Errorf("mode %v size %d, want 0600 and 5", fi.Mode().Perm(), fi.Size())
	}
	flags, err := unix.FcntlInt(f.Fd(), unix.F_GETFD, 0)
	if err != nil || flags&unix.FD_CLOEXEC == 0 {
		t.Errorf("close-on-exec not set: flags %#x, %v", flags, err)
	}
	fl, err := unix.FcntlInt(f.Fd(), unix.F_GETFL, 0)
	if err != nil || fl&unix.O_NONBLOCK != 0 {
		t.Errorf("descriptor flags %#x, %v: want blocking", fl, err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}

	r, err := Open(path, os.O_RDONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 8)
	if n, _ := r.Read(buf); string(buf[:n]) != "hello" {
		t.Errorf("read %q", buf[:n])
	}
	_ = r.Close()

	_, err = Open(filepath.Join(dir, "missing"), os.O_RDONLY, 0)
	var pe *os.PathError
	if !errors.Is(err, fs.ErrNotExist) || !errors.As(err, &pe) || pe.Path != filepath.Join(dir, "missing") {
		t.Errorf("missing file: %v, want a *PathError wrapping fs.ErrNotExist", err)
	}
}

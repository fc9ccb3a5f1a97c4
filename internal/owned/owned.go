// Package owned checks that a private file or directory is what its
// reader expects before it trusts it: exactly the given mode and owned by
// the calling user (hand-off and credentials files, their directories).
// EnsureDir and ReadFile are the checks their writers and readers share.
package owned

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"syscall"
)

// ErrUnsafe: a file or directory is not of the expected type, mode, owner
// or size, so it was not trusted.
var ErrUnsafe = errors.New("owned: unsafe private file")

// Check reports why st is not of exactly mode (type and permission bits)
// and owned by the calling user; nil when it is. Its errors wrap
// ErrUnsafe.
func Check(st os.FileInfo, mode os.FileMode) error {
	if st.Mode() != mode {
		return fmt.Errorf("%w: mode %v, want %v", ErrUnsafe, st.Mode(), mode)
	}
	sys, ok := st.Sys().(*syscall.Stat_t)
	if !ok {
		return fmt.Errorf("%w: no owner information", ErrUnsafe)
	}
	if int(sys.Uid) != os.Geteuid() {
		return fmt.Errorf("%w: owned by uid %d, not %d", ErrUnsafe, sys.Uid, os.Geteuid())
	}
	return nil
}

// EnsureDir creates dir (0700) if missing and checks that it is a 0700
// directory of ours, not a symbolic link: the place for private files.
func EnsureDir(dir string) error {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	st, err := os.Lstat(dir)
	if err != nil {
		return err
	}
	if err := Check(st, os.ModeDir|0o700); err != nil {
		return fmt.Errorf("directory %s: %w", dir, err)
	}
	return nil
}

// ReadFile returns the content of path, a regular 0600 file of ours of at
// most limit bytes, without following a symbolic link. A missing file
// fails with an error wrapping fs.ErrNotExist, anything else untrusted
// with one wrapping ErrUnsafe. Errors never quote the content.
func ReadFile(path string, limit int64) ([]byte, error) {
	return readFile(path, limit, false)
}

// TakeFile is ReadFile that also removes path once it is open, even when
// the file is refused, so that a secret stays on disk only until it is
// read once.
func TakeFile(path string, limit int64) ([]byte, error) {
	return readFile(path, limit, true)
}

func readFile(path string, limit int64, remove bool) ([]byte, error) {
	f, err := os.OpenFile(filepath.Clean(path), os.O_RDONLY|syscall.O_NOFOLLOW, 0)
	if err != nil {
		return nil, err
	}
	defer func() { _ = f.Close() }() // read only: nothing to lose
	var rmErr error
	if remove {
		rmErr = os.Remove(path)
	}
	st, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if err := Check(st, 0o600); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if rmErr != nil {
		return nil, rmErr
	}
	b, err := io.ReadAll(io.LimitReader(f, limit+1))
	if err != nil {
		return nil, err
	}
	if int64(len(b)) > limit {
		return nil, fmt.Errorf("%w: %s is larger than %d bytes", ErrUnsafe, path, limit)
	}
	return b, nil
}

// Package atomicfile replaces a file so that a reader sees either the old
// content or the new one, never a mix or a truncated file: the content
// goes to a temporary file in the same directory, which is renamed over
// the target.
//
// Durable writes also survive a power loss or kernel crash: the
// temporary file is fsynced before the rename and the directory after
// it, so that once Write returns, the new content is on disk under the
// target's name. A writer whose file only has to survive the crash of a
// process (not of the machine), or that is advisory, asks for NoSync and
// says why at the call site.
//
// The temporary file is named "."+base+".tmp-<random>" and is removed
// when the write fails; the directory must exist.
package atomicfile

import (
	"bufio"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
)

// Durability says what a replaced file survives.
type Durability int

const (
	// Durable survives a machine crash: fsync the file, rename, fsync the
	// directory.
	Durable Durability = iota
	// NoSync survives the writer's crash but not the machine's: rename
	// without fsync. Callers say why that is enough.
	NoSync
)

// WriteFile replaces path with data, with the file mode perm (exactly:
// the umask does not apply).
func WriteFile(path string, data []byte, perm fs.FileMode, d Durability) error {
	return Write(path, perm, d, func(w io.Writer) error {
		_, err := w.Write(data)
		return err
	})
}

// Write replaces path with what fill writes (buffered), with the file mode
// perm. When fill fails, path is left as it was and fill's error is
// returned, wrapped.
func Write(path string, perm fs.FileMode, d Durability, fill func(io.Writer) error) (err error) {
	dir, base := filepath.Split(path)
	if dir == "" {
		dir = "."
	}
	f, err := os.CreateTemp(dir, "."+base+".tmp-*")
	if err != nil {
		return fmt.Errorf("atomicfile: %w", err)
	}
	tmp := f.Name()
	defer func() {
		if err != nil {
			_ = f.Close()
			_ = os.Remove(tmp)
			err = fmt.Errorf("atomicfile: write %s: %w", path, err)
		}
	}()
	if err := f.Chmod(perm); err != nil {
		return err
	}
	w := bufio.NewWriterSize(f, 64<<10)
	if err := fill(w); err != nil {
		return err
	}
	if err := w.Flush(); err != nil {
		return err
	}
	if d == Durable {
		if err := f.Sync(); err != nil {
			return err
		}
	}
	if err := f.Close(); err != nil {
		return err
	}
	if err := os.Rename(tmp, path); err != nil {
		return err
	}
	if d == Durable {
		return syncDir(dir)
	}
	return nil
}

// syncDir fsyncs a directory, making a rename in it durable. After a
// successful rename the temporary name is gone, so a failure here leaves
// the new content in place (perhaps not yet durable) and reports it.
func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return fmt.Errorf("fsync the directory: %w", err)
	}
	err = d.Sync()
	if cerr := d.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("fsync the directory: %w", err)
	}
	return nil
}

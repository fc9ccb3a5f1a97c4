package filestore

import (
	"os"
	"syscall"
)

// openDir opens the directory dir (relative to the root) for reading its
// entries' names and types.
//
// ReadDir on a directory opened through os.Root lstats every entry (see
// newUnixDirent in os/file_unix.go), which made listing a 10,000-entry
// directory take 70 ms per page instead of 5. So the directory is resolved
// and opened through the root, and its descriptor is duplicated
// (close-on-exec) into a plain *os.File, whose ReadDir takes the types
// getdents reports. Callers use Name, IsDir and Type of the entries, never
// Info, which would stat by path outside the root's protection.
func (s *Store) openDir(dir string) (*os.File, error) {
	f, err := s.root.Open(dir)
	if err != nil {
		return nil, err
	}
	defer func() { _ = f.Close() }()
	syscall.ForkLock.RLock()
	fd, err := syscall.Dup(int(f.Fd()))
	if err == nil {
		syscall.CloseOnExec(fd)
	}
	syscall.ForkLock.RUnlock()
	if err != nil {
		return nil, &os.PathError{Op: "dup", Path: dir, Err: err}
	}
	return os.NewFile(uintptr(fd), dir), nil
}

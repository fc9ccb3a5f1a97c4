package filestore

import (
	"os"

	"golang.org/x/sys/unix"
)

// openDir opens the directory dir (relative to the root) for reading its
// entries' names and types.
//
// ReadDir on a directory opened through os.Root lstats every entry (see
// newUnixDirent in os/file_unix.go), which made listing a 10,000-entry
// directory take 70 ms per page instead of 5. So the directory is resolved
// and opened through the root, and its descriptor is duplicated into a
// plain *os.File, whose ReadDir takes the types getdents reports. Callers
// use Name, IsDir and Type of the entries, never Info, which would stat by
// path outside the root's protection.
//
// The duplicate is close-on-exec from the start (F_DUPFD_CLOEXEC), not
// dup then CloseOnExec under syscall.ForkLock: os/exec holds that lock
// while its vfork'ed child changes directory and execs, and when the child
// execs a file on a FUSE mount this process serves (a test running a
// program in its own mount), the lookup it waits for would block here on
// the lock forever.
func (s *Store) openDir(dir string) (*os.File, error) {
	f, err := s.root.Open(dir)
	if err != nil {
		return nil, err
	}
	defer func() { _ = f.Close() }()
	fd, err := unix.FcntlInt(f.Fd(), unix.F_DUPFD_CLOEXEC, 0)
	if err != nil {
		return nil, &os.PathError{Op: "dup", Path: dir, Err: err}
	}
	return os.NewFile(uintptr(fd), dir), nil
}

// Package regfile opens regular files without the runtime poller.
//
// os.OpenFile tries to add every descriptor to the network poller: on
// Linux it sets O_NONBLOCK, asks epoll (which refuses regular files) and
// clears O_NONBLOCK again, four system calls more than the open itself.
// The cache and the FUSE layer open a data file for every open of a
// cached file, so those calls are a visible share of a warm small-file
// pass; Open here costs one open(2) and one fcntl(2).
package regfile

import (
	"errors"
	"os"

	"golang.org/x/sys/unix"
)

// Open opens the regular file at path like os.OpenFile (close-on-exec;
// errors are *os.PathError, so errors.Is(err, fs.ErrNotExist) works) but
// leaves it out of the runtime poller. Do not use it for pipes, FIFOs,
// sockets or devices, whose reads may block.
func Open(path string, flag int, perm os.FileMode) (*os.File, error) {
	for {
		fd, err := unix.Open(path, flag|unix.O_CLOEXEC, uint32(perm.Perm()))
		if errors.Is(err, unix.EINTR) {
			continue
		}
		if err != nil {
			return nil, &os.PathError{Op: "open", Path: path, Err: err}
		}
		return os.NewFile(uintptr(fd), path), nil
	}
}

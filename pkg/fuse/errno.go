package fuse

import (
	"context"
	"errors"
	"syscall"

	"github.com/basin-csi/basin/pkg/objstore"
)

// toErrno is the one mapping from errors to errno values; callers never
// inspect error strings. A nil error is 0.
func toErrno(err error) syscall.Errno {
	if err == nil {
		return 0
	}
	var errno syscall.Errno
	switch {
	case errors.Is(err, objstore.ErrNotFound):
		return syscall.ENOENT
	case errors.Is(err, objstore.ErrAccessDenied):
		return syscall.EACCES
	case errors.Is(err, objstore.ErrExists):
		// An exclusive create (O_EXCL) lost to another creator.
		return syscall.EEXIST
	case errors.Is(err, objstore.ErrPreconditionFailed):
		// The object changed under an open file.
		return syscall.ESTALE
	case errors.Is(err, objstore.ErrMetadataUnsupported):
		// chmod, chown or utimes on a store that keeps no metadata.
		return syscall.EPERM
	case errors.Is(err, objstore.ErrInvalidKey), errors.Is(err, objstore.ErrInvalidRange):
		return syscall.EINVAL
	case errors.Is(err, objstore.ErrThrottled), errors.Is(err, objstore.ErrUnavailable),
		errors.Is(err, context.DeadlineExceeded):
		return syscall.EIO
	case errors.Is(err, context.Canceled):
		// Work given up by Basin itself (an unmount, a shutdown): the
		// kernel's interrupts never cancel a request (interrupts.go).
		return syscall.EINTR
	case errors.As(err, &errno):
		// Local file errors of the staging area (ENOSPC, EDQUOT...).
		return errno
	default:
		return syscall.EIO
	}
}

// The errno of each operation the file system cannot do, as POSIX
// prescribes for a file system that does not support it (callers such as
// cp, tar and package managers fall back on exactly these). Operations
// left to go-fuse's defaults answer as the kernel expects: extended
// attributes ENOTSUP (EOPNOTSUPP), fallocate EOPNOTSUPP; copy_file_range,
// lseek(SEEK_DATA) and locks fall back to the kernel's generic code.
const (
	// errnoNoHardLinks: link(2), "the file system does not support the
	// creation of hard links".
	errnoNoHardLinks = syscall.EPERM
	// errnoNoSpecialFiles: mknod(2)/mkfifo(3) of a FIFO, socket or
	// device, "the file system does not support the type of node".
	errnoNoSpecialFiles = syscall.EPERM
	// errnoNoRenameFlag: rename with RENAME_EXCHANGE or RENAME_WHITEOUT,
	// "the file system does not support one of the flags".
	errnoNoRenameFlag = syscall.EINVAL
)

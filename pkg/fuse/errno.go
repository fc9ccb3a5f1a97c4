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
	case errors.Is(err, objstore.ErrPreconditionFailed):
		// The object changed under an open file.
		return syscall.ESTALE
	case errors.Is(err, objstore.ErrInvalidKey), errors.Is(err, objstore.ErrInvalidRange):
		return syscall.EINVAL
	case errors.Is(err, objstore.ErrThrottled), errors.Is(err, objstore.ErrUnavailable),
		errors.Is(err, context.DeadlineExceeded):
		return syscall.EIO
	case errors.Is(err, context.Canceled):
		// The kernel interrupted the request (signal to the caller).
		return syscall.EINTR
	case errors.As(err, &errno):
		// Local file errors of the staging area (ENOSPC, EDQUOT...).
		return errno
	default:
		return syscall.EIO
	}
}

package supervisor

import "errors"

// Sentinel errors of the supervisor, wrapped with context.
var (
	// ErrTimeout: a mount did not answer within the time allowed (the
	// FUSE process is hung or was never ready).
	ErrTimeout = errors.New("supervisor: mount did not answer in time")
	// ErrBroken: the mount answers with an error that means its FUSE
	// connection is gone (ENOTCONN) or its server misbehaves (EIO,
	// ESTALE...); the wrapped errno tells which.
	ErrBroken = errors.New("supervisor: mount is broken")
	// ErrNotMounted: nothing is mounted where a mount should be.
	ErrNotMounted = errors.New("supervisor: not mounted")
	// ErrExited: the FUSE process exited.
	ErrExited = errors.New("supervisor: FUSE process exited")
	// ErrNotStaged: the Manager supervises no volume of that ID.
	ErrNotStaged = errors.New("supervisor: volume not staged")
	// ErrConflict: the volume is staged with a different request.
	ErrConflict = errors.New("supervisor: volume staged differently")
	// ErrClosed: the Manager was closed.
	ErrClosed = errors.New("supervisor: manager closed")
	// ErrCredentialsFile: a rotation or ack file is not what the writer
	// makes (mode, owner, type).
	ErrCredentialsFile = errors.New("supervisor: unsafe credentials file")
)

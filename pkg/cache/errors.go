package cache

import "errors"

// Sentinel errors of the cache. Callers classify them with errors.Is; the
// bucket's own errors (objstore.ErrNotFound, ErrPreconditionFailed...) pass
// through wrapped.
var (
	// ErrClosed: the Cache (or the Handle) was closed.
	ErrClosed = errors.New("cache: closed")
	// ErrLocked: another process holds the cache directory open.
	ErrLocked = errors.New("cache: directory in use by another process")
	// ErrInvalidOptions: Options failed validation.
	ErrInvalidOptions = errors.New("cache: invalid options")
	// ErrInvalidArgument: a path, offset, size or volume id is not acceptable.
	ErrInvalidArgument = errors.New("cache: invalid argument")
	// ErrSchemaTooNew: the index was written by a newer binary.
	ErrSchemaTooNew = errors.New("cache: index schema is newer than this binary")
	// ErrCorruptRecord: an index record does not decode.
	ErrCorruptRecord = errors.New("cache: corrupt index record")
	// ErrNoSpace: the cache cannot make room for the data (capacity or
	// the disk's free floor); it is served from the bucket instead.
	ErrNoSpace = errors.New("cache: no room in the cache")
	// ErrInconsistent: Verify found problems (listed in its Report).
	ErrInconsistent = errors.New("cache: verification failed")
)

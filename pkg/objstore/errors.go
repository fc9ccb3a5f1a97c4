package objstore

import "errors"

// Sentinel errors. Adapters wrap them (fmt.Errorf("...: %w", ErrNotFound))
// so callers classify with errors.Is; nobody inspects error strings.
var (
	// ErrNotFound: the object or bucket does not exist.
	ErrNotFound = errors.New("objstore: not found")
	// ErrAccessDenied: the credentials are missing, wrong or not allowed.
	ErrAccessDenied = errors.New("objstore: access denied")
	// ErrPreconditionFailed: the object changed (IfVersion did not match).
	ErrPreconditionFailed = errors.New("objstore: precondition failed")
	// ErrThrottled: the store asked us to slow down and retries ran out.
	ErrThrottled = errors.New("objstore: throttled")
	// ErrUnavailable: the store could not be reached or kept failing
	// (network error, 5xx, timeout) after bounded retries.
	ErrUnavailable = errors.New("objstore: unavailable")
	// ErrInvalidRange: the requested offset lies past the end of the object.
	ErrInvalidRange = errors.New("objstore: invalid range")
	// ErrInvalidKey: the key is empty or cannot be stored by this backend.
	ErrInvalidKey = errors.New("objstore: invalid key")
	// ErrBucketNotEmpty: DeleteBucket on a bucket that still holds objects.
	ErrBucketNotEmpty = errors.New("objstore: bucket not empty")
	// ErrBucketExists: the bucket name is taken by another owner.
	ErrBucketExists = errors.New("objstore: bucket already exists")
	// ErrInvalidConfig: the Config is incomplete or contradictory.
	ErrInvalidConfig = errors.New("objstore: invalid configuration")
)

// IsRetryable reports whether err is worth retrying at a higher level
// (adapters already retried; callers such as the cache may try again later).
func IsRetryable(err error) bool {
	return errors.Is(err, ErrThrottled) || errors.Is(err, ErrUnavailable)
}

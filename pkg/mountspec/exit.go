package mountspec

import (
	"errors"
	"fmt"

	"github.com/basin-csi/basin/pkg/objstore"
)

// Exit codes of a mount process that gave up before serving. Any other
// non-zero code is a failure without a known cause.
const (
	ExitNotFound     = 3 // the bucket (or the file backend's directory) does not exist
	ExitAccessDenied = 4 // the store refused the credentials
	ExitUnavailable  = 5 // the store could not be reached in time
	ExitInvalid      = 6 // the spec or the arguments are not valid
	// ExitVersion: the hand-off file's Spec is of another version (the
	// node plugin and the mount process are from different releases). It
	// is not ExitInvalid: the request was fine, the deployment is not.
	ExitVersion = 7
)

// exitCodes is the one table between exit codes and the errors they
// stand for, in the order ExitCode checks them.
func exitCodes() []struct {
	code int
	err  error
} {
	return []struct {
		code int
		err  error
	}{
		{ExitAccessDenied, objstore.ErrAccessDenied},
		{ExitNotFound, objstore.ErrNotFound},
		{ExitUnavailable, objstore.ErrUnavailable},
		{ExitUnavailable, objstore.ErrThrottled},
		{ExitVersion, ErrVersion},
		{ExitInvalid, ErrInvalid},
		{ExitInvalid, objstore.ErrInvalidConfig},
	}
}

// ExitCode is the exit code of a mount process failing with err: one of
// the codes above, or 1.
func ExitCode(err error) int {
	for _, e := range exitCodes() {
		if errors.Is(err, e.err) {
			return e.code
		}
	}
	return 1
}

// ExitError returns an error wrapping the sentinel an exit code stands
// for (the first in the table for a code that several share), or nil for
// a code without a known cause.
func ExitError(code int) error {
	for _, e := range exitCodes() {
		if e.code == code {
			return fmt.Errorf("exit code %d: %w", code, e.err)
		}
	}
	return nil
}

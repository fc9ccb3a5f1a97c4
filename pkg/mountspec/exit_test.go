package mountspec

import (
	"errors"
	"fmt"
	"testing"

	"github.com/basin-csi/basin/pkg/objstore"
)

func TestExitCodesRoundTrip(t *testing.T) {
	for _, sentinel := range []error{objstore.ErrNotFound, objstore.ErrAccessDenied, objstore.ErrUnavailable, ErrInvalid} {
		code := ExitCode(fmt.Errorf("open: %w", sentinel))
		if code <= 1 {
			t.Errorf("%v: exit code %d", sentinel, code)
			continue
		}
		if err := ExitError(code); !errors.Is(err, sentinel) {
			t.Errorf("ExitError(%d) = %v, want %v", code, err, sentinel)
		}
	}
	if ExitCode(errors.New("other")) != 1 || ExitError(1) != nil || ExitError(0) != nil {
		t.Error("an unknown cause maps to a sentinel")
	}
}

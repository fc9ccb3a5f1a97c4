package mountspec

import (
	"errors"
	"fmt"
	"testing"

	"github.com/basin-csi/basin/pkg/objstore"
)

func TestExitCodesRoundTrip(t *testing.T) {
	for _, sentinel := range []error{objstore.ErrNotFound, objstore.ErrAccessDenied, objstore.ErrUnavailable, ErrInvalid, ErrVersion} {
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

// TestExitVersionIsNotInvalid: a version skew between the node plugin and
// the mount process has its own code, so the node plugin does not report
// it as an invalid request.
func TestExitVersionIsNotInvalid(t *testing.T) {
	code := ExitCode(fmt.Errorf("read hand-off file: %w", ErrVersion))
	if code != ExitVersion {
		t.Fatalf("ExitCode(ErrVersion) = %d, want ExitVersion (%d)", code, ExitVersion)
	}
	if err := ExitError(code); errors.Is(err, ErrInvalid) || !errors.Is(err, ErrVersion) {
		t.Errorf("ExitError(ExitVersion) = %v, want ErrVersion and not ErrInvalid", err)
	}
	if err := ExitError(ExitInvalid); !errors.Is(err, ErrInvalid) {
		t.Errorf("ExitError(ExitInvalid) = %v, want ErrInvalid", err)
	}
}

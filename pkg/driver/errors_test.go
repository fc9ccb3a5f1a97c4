package driver

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/basin-csi/basin/pkg/driver/volumeattr"
	"github.com/basin-csi/basin/pkg/mountspec"
	"github.com/basin-csi/basin/pkg/objstore"
	"github.com/basin-csi/basin/pkg/supervisor"
)

func TestToStatus(t *testing.T) {
	wrap := func(errs ...error) error {
		args := make([]any, len(errs))
		for i, e := range errs {
			args[i] = e
		}
		return fmt.Errorf("op"+strings.Repeat(": %w", len(errs)), args...)
	}
	cases := []struct {
		err  error
		code codes.Code
	}{
		{wrap(volumeattr.ErrInvalid), codes.InvalidArgument},
		{wrap(ErrInvalidRequest), codes.InvalidArgument},
		{wrap(ErrMissingSecret), codes.InvalidArgument},
		{wrap(ErrVolumeNotFound, errMalformedID), codes.NotFound},
		{wrap(ErrPrecondition), codes.FailedPrecondition},
		{wrap(ErrNameConflict), codes.AlreadyExists},
		{wrap(ErrBusy), codes.Aborted},
		{wrap(ErrOutOfRange), codes.OutOfRange},
		{wrap(objstore.ErrAccessDenied), codes.PermissionDenied},
		{wrap(objstore.ErrBucketExists), codes.AlreadyExists},
		{wrap(objstore.ErrNotFound), codes.NotFound},
		{wrap(objstore.ErrThrottled), codes.Unavailable},
		{wrap(objstore.ErrUnavailable), codes.Unavailable},
		{wrap(objstore.ErrInvalidConfig), codes.InvalidArgument},
		{wrap(objstore.ErrInvalidKey), codes.InvalidArgument},
		{wrap(objstore.ErrBucketNotEmpty), codes.FailedPrecondition},
		{wrap(objstore.ErrPreconditionFailed), codes.Aborted},
		{wrap(context.DeadlineExceeded), codes.DeadlineExceeded},
		{wrap(context.Canceled), codes.Canceled},
		{errors.New("something else"), codes.Internal},
		// The driver's meaning wins over the store's condition.
		{wrap(ErrPrecondition, objstore.ErrNotFound), codes.FailedPrecondition},
		{wrap(ErrMissingSecret, objstore.ErrUnavailable), codes.InvalidArgument},
		// A status error keeps its code.
		{status.Error(codes.ResourceExhausted, "x"), codes.ResourceExhausted},
		{fmt.Errorf("wrapped: %w", status.Error(codes.Unauthenticated, "x")), codes.Unauthenticated},
	}
	for _, c := range cases {
		if got := status.Code(toStatus(c.err)); got != c.code {
			t.Errorf("toStatus(%v) = %v; want %v", c.err, got, c.code)
		}
	}
	if toStatus(nil) != nil {
		t.Error("toStatus(nil) != nil")
	}
}

func TestRedact(t *testing.T) {
	err := status.Error(codes.PermissionDenied, "key AKIA123456 and secret s3cr3t-value rejected")
	got := redact(err, []string{"AKIA123456", "s3cr3t-value"})
	if status.Code(got) != codes.PermissionDenied {
		t.Errorf("code changed to %v", status.Code(got))
	}
	if msg := status.Convert(got).Message(); strings.Contains(msg, "AKIA123456") || strings.Contains(msg, "s3cr3t-value") {
		t.Errorf("message still holds a secret: %q", msg)
	}
	if redact(nil, []string{"x"}) != nil {
		t.Error("redact(nil) != nil")
	}
	// Short values, endpoint and region are not treated as secrets.
	v := secretValues(map[string]string{volumeattr.SecretEndpoint: "http://minio:9000", volumeattr.SecretRegion: "us-east-1",
		volumeattr.SecretAccessKeyID: "AKIA123456", "x": "abc"})
	if len(v) != 1 || v[0] != "AKIA123456" {
		t.Errorf("secretValues = %q", v)
	}
}

// TestStageErrorOfAMountProcessExit: what NodeStageVolume answers when the
// mount process gave up with one of mountspec's exit codes. A version skew
// between the node plugin and the mount process is the deployment's
// problem, not an invalid request.
func TestStageErrorOfAMountProcessExit(t *testing.T) {
	for _, c := range []struct {
		exit int
		code codes.Code
	}{
		{mountspec.ExitNotFound, codes.NotFound},
		{mountspec.ExitAccessDenied, codes.PermissionDenied},
		{mountspec.ExitUnavailable, codes.Unavailable},
		{mountspec.ExitInvalid, codes.InvalidArgument},
		{mountspec.ExitVersion, codes.FailedPrecondition},
		{1, codes.FailedPrecondition},
	} {
		// As the supervisor reports it (exitError in pkg/supervisor).
		err := fmt.Errorf("%w before serving (exit status %d)", supervisor.ErrExited, c.exit)
		if cause := mountspec.ExitError(c.exit); cause != nil {
			err = fmt.Errorf("%w before serving (%w)", supervisor.ErrExited, cause)
		}
		if got := status.Code(toStatus(stageError(err))); got != c.code {
			t.Errorf("exit code %d: %v, want %v", c.exit, got, c.code)
		}
	}
}

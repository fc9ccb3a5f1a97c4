package driver

import (
	"context"
	"errors"
	"strings"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/basin-csi/basin/pkg/driver/volumeattr"
	"github.com/basin-csi/basin/pkg/mountspec"
	"github.com/basin-csi/basin/pkg/objstore"
)

// Sentinel errors of the driver. Handlers wrap them (often together with
// an objstore sentinel) and toStatus maps them to gRPC codes.
var (
	// ErrInvalidRequest: the request itself is malformed or asks for
	// something the driver does not support.
	ErrInvalidRequest = errors.New("driver: invalid request")
	// ErrMissingSecret: the request carries no credentials and the driver
	// was told to require them.
	ErrMissingSecret = errors.New("driver: missing secret")
	// ErrVolumeNotFound: the volume ID names no existing volume.
	ErrVolumeNotFound = errors.New("driver: volume not found")
	// ErrPrecondition: the world is not in the state the operation needs
	// (the bucket for provisioning=prefix does not exist, the secret's
	// endpoint is not the volume's).
	ErrPrecondition = errors.New("driver: failed precondition")
	// ErrNameConflict: a volume of this name exists but does not match the
	// request (capacity, or it is not Basin's).
	ErrNameConflict = errors.New("driver: volume exists with different properties")
	// ErrBusy: an operation on the same volume is still running.
	ErrBusy = errors.New("driver: operation already in progress")
	// ErrOutOfRange: the requested capacity range is impossible.
	ErrOutOfRange = errors.New("driver: capacity out of range")
)

// codeOf lists the sentinels in the order toStatus checks them: driver
// sentinels first (they say what the operation meant), then objstore's.
func codeOf(err error) codes.Code {
	for _, m := range []struct {
		err  error
		code codes.Code
	}{
		{context.Canceled, codes.Canceled},
		{context.DeadlineExceeded, codes.DeadlineExceeded},
		{ErrInvalidRequest, codes.InvalidArgument},
		{volumeattr.ErrInvalid, codes.InvalidArgument},
		{mountspec.ErrInvalid, codes.InvalidArgument},
		{ErrMissingSecret, codes.InvalidArgument},
		{ErrVolumeNotFound, codes.NotFound},
		{ErrPrecondition, codes.FailedPrecondition},
		{ErrNameConflict, codes.AlreadyExists},
		{ErrBusy, codes.Aborted},
		{ErrOutOfRange, codes.OutOfRange},
		{objstore.ErrAccessDenied, codes.PermissionDenied},
		{objstore.ErrBucketExists, codes.AlreadyExists},
		{objstore.ErrNotFound, codes.NotFound},
		{objstore.ErrThrottled, codes.Unavailable},
		{objstore.ErrUnavailable, codes.Unavailable},
		{objstore.ErrInvalidConfig, codes.InvalidArgument},
		{objstore.ErrInvalidKey, codes.InvalidArgument},
		{objstore.ErrBucketNotEmpty, codes.FailedPrecondition},
		{objstore.ErrPreconditionFailed, codes.Aborted},
	} {
		if errors.Is(err, m.err) {
			return m.code
		}
	}
	return codes.Internal
}

// toStatus is the one place errors become gRPC status errors. An error
// that already carries a status keeps it.
func toStatus(err error) error {
	if err == nil {
		return nil
	}
	var withStatus interface{ GRPCStatus() *status.Status }
	if errors.As(err, &withStatus) {
		return err
	}
	return status.Error(codeOf(err), err.Error())
}

// redact replaces every secret value in a status error's message: a
// safety net under the rule that no error ever quotes a secret.
func redact(err error, secrets []string) error {
	if err == nil || len(secrets) == 0 {
		return err
	}
	st, ok := status.FromError(err)
	if !ok {
		return err
	}
	msg := st.Message()
	for _, s := range secrets {
		if s != "" {
			msg = strings.ReplaceAll(msg, s, "[REDACTED]")
		}
	}
	if msg == st.Message() {
		return err
	}
	return status.Error(st.Code(), msg)
}

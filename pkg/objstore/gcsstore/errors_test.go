package gcsstore

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"syscall"
	"testing"

	"cloud.google.com/go/storage"
	"google.golang.org/api/googleapi"

	"github.com/basin-csi/basin/pkg/objstore"
)

func TestMapErr(t *testing.T) {
	apiErr := func(code int) error {
		// The SDK wraps API errors on their way out; mapErr must see
		// through that with errors.As.
		return fmt.Errorf("storage: retry failed after 3 attempts; last error: %w", &googleapi.Error{Code: code})
	}
	cases := []struct {
		name string
		op   op
		err  error
		want error // nil: no sentinel
	}{
		{"object not exist", opStat, storage.ErrObjectNotExist, objstore.ErrNotFound},
		{"bucket not exist", opList, storage.ErrBucketNotExist, objstore.ErrNotFound},
		{"404", opRead, apiErr(404), objstore.ErrNotFound},
		{"401", opStat, apiErr(401), objstore.ErrAccessDenied},
		{"403", opPut, apiErr(403), objstore.ErrAccessDenied},
		{"412 on read", opRead, apiErr(412), objstore.ErrPreconditionFailed},
		{"416", opRead, apiErr(416), objstore.ErrInvalidRange},
		{"429", opStat, apiErr(429), objstore.ErrThrottled},
		{"408", opStat, apiErr(408), objstore.ErrUnavailable},
		{"500", opStat, apiErr(500), objstore.ErrUnavailable},
		{"503", opPut, apiErr(503), objstore.ErrUnavailable},
		{"409 on create bucket", opCreateBucket, apiErr(409), objstore.ErrBucketExists},
		{"409 on delete bucket", opDeleteBucket, apiErr(409), objstore.ErrBucketNotEmpty},
		{"412 on delete bucket (fake-gcs-server)", opDeleteBucket, apiErr(412), objstore.ErrBucketNotEmpty},
		{"409 on put", opPut, apiErr(409), objstore.ErrUnavailable},
		{"400", opStat, apiErr(400), nil},
		{"deadline", opStat, context.DeadlineExceeded, objstore.ErrUnavailable},
		{"unexpected EOF", opRead, io.ErrUnexpectedEOF, objstore.ErrUnavailable},
		{"connection refused", opStat, &net.OpError{Op: "dial", Net: "tcp", Err: syscall.ECONNREFUSED}, objstore.ErrUnavailable},
		{"connection reset", opRead, fmt.Errorf("read: %w", syscall.ECONNRESET), objstore.ErrUnavailable},
		{"already classified", opRead, fmt.Errorf("x: %w", objstore.ErrPreconditionFailed), objstore.ErrPreconditionFailed},
		{"other", opStat, errors.New("something else"), nil},
	}
	sentinels := []error{
		objstore.ErrNotFound, objstore.ErrAccessDenied, objstore.ErrPreconditionFailed,
		objstore.ErrThrottled, objstore.ErrUnavailable, objstore.ErrInvalidRange,
		objstore.ErrBucketNotEmpty, objstore.ErrBucketExists,
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := mapErr(c.op, "key", c.err)
			if !errors.Is(got, c.err) {
				t.Errorf("mapErr(%v) = %v, lost the original error", c.err, got)
			}
			for _, s := range sentinels {
				if errors.Is(got, s) != (s == c.want) {
					t.Errorf("mapErr(%v) = %v: errors.Is(%v) = %v", c.err, got, s, errors.Is(got, s))
				}
			}
		})
	}
	if mapErr(opStat, "k", nil) != nil {
		t.Error("mapErr(nil) != nil")
	}
}

func TestMapErrCanceledStaysCanceled(t *testing.T) {
	got := mapErr(opRead, "k", fmt.Errorf("get: %w", context.Canceled))
	if !errors.Is(got, context.Canceled) || objstore.IsRetryable(got) {
		t.Errorf("mapErr(canceled) = %v, want context.Canceled and not retryable", got)
	}
}

func TestMapErrKeepsAPIError(t *testing.T) {
	got := mapErr(opStat, "k", &googleapi.Error{Code: 403})
	var gerr *googleapi.Error
	if !errors.As(got, &gerr) || gerr.Code != 403 {
		t.Errorf("mapErr lost *googleapi.Error: %v", got)
	}
}

package s3store

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws/retry"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
	"github.com/aws/smithy-go"
	smithyhttp "github.com/aws/smithy-go/transport/http"

	"github.com/basin-csi/basin/pkg/objstore"
)

// responseErr is what the SDK returns for an HTTP error response.
func responseErr(status int, inner error) error {
	return &smithyhttp.ResponseError{
		Response: &smithyhttp.Response{Response: &http.Response{StatusCode: status}},
		Err:      inner,
	}
}

func apiErr(code string) error { return &smithy.GenericAPIError{Code: code, Message: "message"} }

func TestMapErr(t *testing.T) {
	dialErr := &net.OpError{Op: "dial", Net: "tcp", Err: errors.New("connection refused")}
	cases := []struct {
		name string
		err  error
		want error // nil: no sentinel
	}{
		{"NoSuchKey", responseErr(404, &types.NoSuchKey{}), objstore.ErrNotFound},
		{"HEAD 404", responseErr(404, apiErr("NotFound")), objstore.ErrNotFound},
		{"bare 404", responseErr(404, errors.New("?")), objstore.ErrNotFound},
		{"NoSuchBucket", responseErr(404, &types.NoSuchBucket{}), objstore.ErrNotFound},
		{"AccessDenied", responseErr(403, apiErr("AccessDenied")), objstore.ErrAccessDenied},
		{"InvalidAccessKeyId", responseErr(403, apiErr("InvalidAccessKeyId")), objstore.ErrAccessDenied},
		{"SignatureDoesNotMatch", responseErr(403, apiErr("SignatureDoesNotMatch")), objstore.ErrAccessDenied},
		{"bare 403", responseErr(403, errors.New("?")), objstore.ErrAccessDenied},
		{"PreconditionFailed", responseErr(412, apiErr("PreconditionFailed")), objstore.ErrPreconditionFailed},
		{"bare 412", responseErr(412, errors.New("?")), objstore.ErrPreconditionFailed},
		{"InvalidRange", responseErr(416, apiErr("InvalidRange")), objstore.ErrInvalidRange},
		{"bare 416", responseErr(416, errors.New("?")), objstore.ErrInvalidRange},
		{"SlowDown", responseErr(503, apiErr("SlowDown")), objstore.ErrThrottled},
		{"bare 503", responseErr(503, errors.New("?")), objstore.ErrThrottled},
		{"429", responseErr(429, errors.New("?")), objstore.ErrThrottled},
		{"SlowDown after retries", &retry.MaxAttemptsError{Attempt: 5, Err: responseErr(503, apiErr("SlowDown"))}, objstore.ErrThrottled},
		{"BucketNotEmpty", responseErr(409, apiErr("BucketNotEmpty")), objstore.ErrBucketNotEmpty},
		{"BucketAlreadyExists", responseErr(409, &types.BucketAlreadyExists{}), objstore.ErrBucketExists},
		{"BucketAlreadyOwnedByYou", responseErr(409, &types.BucketAlreadyOwnedByYou{}), nil},
		{"InternalError", responseErr(500, apiErr("InternalError")), objstore.ErrUnavailable},
		{"bare 502", responseErr(502, errors.New("?")), objstore.ErrUnavailable},
		{"MinIO bad key", responseErr(400, apiErr("XMinioInvalidResourceName")), objstore.ErrInvalidKey},
		{"other 400", responseErr(400, apiErr("InvalidArgument")), nil},
		{"dial", &smithyhttp.RequestSendError{Err: dialErr}, objstore.ErrUnavailable},
		{"our timeout", &smithy.CanceledError{Err: context.DeadlineExceeded}, objstore.ErrUnavailable},
		{"our timeout, status 0", responseErr(0, &smithy.CanceledError{Err: context.DeadlineExceeded}), objstore.ErrUnavailable},
		{"body cut short", &smithy.DeserializationError{Err: io.ErrUnexpectedEOF}, objstore.ErrUnavailable},
		{"stalled body", errors.Join(objstore.ErrUnavailable, errors.New("stalled")), objstore.ErrUnavailable},
		{"plain", errors.New("something else"), nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			err := mapErr(t.Context(), "Op", "bucket", "key", c.err)
			if err == nil {
				t.Fatal("mapErr returned nil")
			}
			if !errors.Is(err, c.err) {
				t.Errorf("%v does not wrap the SDK error", err)
			}
			if !strings.Contains(err.Error(), `bucket/"key"`) {
				t.Errorf("%v does not say which object", err)
			}
			for _, s := range sentinels {
				if got, want := errors.Is(err, s), s == c.want; got != want {
					t.Errorf("errors.Is(%v, %v) = %v, want %v", err, s, got, want)
				}
			}
		})
	}
	if mapErr(t.Context(), "Op", "b", "k", nil) != nil {
		t.Error("mapErr(nil) != nil")
	}
}

// TestMapErrCallerCancelled: the caller's cancellation is context.Canceled,
// not a store failure, whatever the SDK made of it.
func TestMapErrCallerCancelled(t *testing.T) {
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	for _, sdkErr := range []error{
		&smithy.CanceledError{Err: context.Canceled},
		&smithyhttp.RequestSendError{Err: errors.New("use of closed network connection")},
	} {
		err := mapErr(ctx, "Op", "bucket", "key", sdkErr)
		if !errors.Is(err, context.Canceled) || objstore.IsRetryable(err) {
			t.Errorf("mapErr(cancelled ctx, %v) = %v, want context.Canceled and not retryable", sdkErr, err)
		}
	}
}

func TestBucketHelpers(t *testing.T) {
	if !isBucketOwned(responseErr(409, &types.BucketAlreadyOwnedByYou{})) || isBucketOwned(responseErr(409, &types.BucketAlreadyExists{})) {
		t.Error("isBucketOwned misclassifies")
	}
	if !isNoSuchBucket(responseErr(404, &types.NoSuchBucket{})) || isNoSuchBucket(responseErr(404, &types.NoSuchKey{})) {
		t.Error("isNoSuchBucket misclassifies")
	}
}

package s3store

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"

	"github.com/aws/smithy-go"

	"github.com/basin-csi/basin/pkg/objstore"
)

// sentinels lists the objstore errors an error may already wrap.
var sentinels = []error{
	objstore.ErrNotFound, objstore.ErrAccessDenied, objstore.ErrPreconditionFailed,
	objstore.ErrThrottled, objstore.ErrUnavailable, objstore.ErrInvalidRange,
	objstore.ErrInvalidKey, objstore.ErrBucketNotEmpty, objstore.ErrBucketExists,
	objstore.ErrInvalidConfig, objstore.ErrExists,
}

// errorCodes maps S3 (and OSS) error codes to sentinels. BucketAlreadyOwnedByYou
// is absent on purpose: CreateBucket treats it as success.
var errorCodes = map[string]error{
	"NoSuchKey":    objstore.ErrNotFound,
	"NotFound":     objstore.ErrNotFound,
	"NoSuchBucket": objstore.ErrNotFound,

	"AccessDenied":          objstore.ErrAccessDenied,
	"InvalidAccessKeyId":    objstore.ErrAccessDenied,
	"SignatureDoesNotMatch": objstore.ErrAccessDenied,
	"AllAccessDisabled":     objstore.ErrAccessDenied,
	"AccountProblem":        objstore.ErrAccessDenied,
	"ExpiredToken":          objstore.ErrAccessDenied,
	"InvalidToken":          objstore.ErrAccessDenied,
	"InvalidSecurity":       objstore.ErrAccessDenied,

	"PreconditionFailed": objstore.ErrPreconditionFailed,
	// A conditional create that lost (conditional.go): a concurrent one
	// in flight (S3), or an existing key under x-oss-forbid-overwrite.
	"ConditionalRequestConflict": objstore.ErrExists,
	"FileAlreadyExists":          objstore.ErrExists,
	"InvalidRange":               objstore.ErrInvalidRange,

	"SlowDown":             objstore.ErrThrottled,
	"Throttling":           objstore.ErrThrottled,
	"ThrottlingException":  objstore.ErrThrottled,
	"RequestLimitExceeded": objstore.ErrThrottled,
	"TooManyRequests":      objstore.ErrThrottled,

	"BucketNotEmpty":      objstore.ErrBucketNotEmpty,
	"BucketAlreadyExists": objstore.ErrBucketExists,

	"KeyTooLongError":   objstore.ErrInvalidKey,
	"InvalidObjectName": objstore.ErrInvalidKey, // OSS
	// MinIO refuses keys with "." or ".." segments.
	"XMinioInvalidObjectName":   objstore.ErrInvalidKey,
	"XMinioInvalidResourceName": objstore.ErrInvalidKey,

	"InternalError":      objstore.ErrUnavailable,
	"ServiceUnavailable": objstore.ErrUnavailable,
	"RequestTimeout":     objstore.ErrUnavailable,
	// MinIO answers the requests in flight when it shuts down with 499.
	"ClientDisconnected": objstore.ErrUnavailable,
}

// statusClientClosed (499, not in net/http) is what MinIO answers the
// requests in flight with while it shuts down (ClientDisconnected, "Client
// disconnected before response was ready"): the request never ran to its
// end, and is retried like a 5xx (retryer in client.go). make soak: a
// MinIO restart failed writers' close(2) with EIO at once.
const statusClientClosed = 499

// mapErr is the adapter's only translation of SDK errors: it wraps err with
// the objstore sentinel that classifies it, and with what was attempted.
// ctx is the caller's context: when it is done, its error is returned
// instead, because the store did nothing wrong. An error that already
// wraps a sentinel passes through with context added.
func mapErr(ctx context.Context, op, bucket, key string, err error) error {
	if err == nil {
		return nil
	}
	where := bucket
	if key != "" {
		where = fmt.Sprintf("%s/%q", bucket, key)
	}
	if ctxErr := ctx.Err(); ctxErr != nil {
		return fmt.Errorf("s3store: %s %s: %w", op, where, ctxErr)
	}
	for _, s := range sentinels {
		if errors.Is(err, s) {
			return fmt.Errorf("s3store: %s %s: %w", op, where, err)
		}
	}
	if s := classify(err); s != nil {
		return fmt.Errorf("s3store: %s %s: %w: %w", op, where, s, err)
	}
	return fmt.Errorf("s3store: %s %s: %w", op, where, err)
}

// classify returns the sentinel for err, or nil if none applies (a
// malformed request, for instance, is a bug, not a store condition).
func classify(err error) error {
	var apiErr smithy.APIError
	if errors.As(err, &apiErr) {
		if s, ok := errorCodes[apiErr.ErrorCode()]; ok {
			return s
		}
	}
	// HEAD responses have no body, so their errors carry only a status.
	// (A status of 0 means no response came: see below.)
	var respErr interface{ HTTPStatusCode() int }
	if errors.As(err, &respErr) && respErr.HTTPStatusCode() > 0 {
		switch code := respErr.HTTPStatusCode(); {
		case code == http.StatusNotFound:
			return objstore.ErrNotFound
		case code == http.StatusForbidden:
			return objstore.ErrAccessDenied
		case code == http.StatusPreconditionFailed:
			return objstore.ErrPreconditionFailed
		case code == http.StatusRequestedRangeNotSatisfiable:
			return objstore.ErrInvalidRange
		case code == http.StatusServiceUnavailable || code == http.StatusTooManyRequests:
			return objstore.ErrThrottled
		case code >= 500 || code == statusClientClosed:
			return objstore.ErrUnavailable
		}
		return nil
	}
	// No response at all: the network, a timeout of ours, or a body cut
	// short.
	var netErr net.Error
	var timeoutErr interface{ Timeout() bool }
	var connErr interface{ ConnectionError() bool }
	switch {
	case errors.As(err, &netErr),
		errors.As(err, &timeoutErr) && timeoutErr.Timeout(),
		errors.As(err, &connErr) && connErr.ConnectionError(),
		errors.Is(err, context.DeadlineExceeded),
		errors.Is(err, context.Canceled),
		errors.Is(err, io.ErrUnexpectedEOF),
		errors.Is(err, io.EOF):
		return objstore.ErrUnavailable
	}
	return nil
}

// isNoSuchBucket reports whether err says the bucket itself is missing (as
// opposed to a key in it).
func isNoSuchBucket(err error) bool {
	var apiErr smithy.APIError
	return errors.As(err, &apiErr) && apiErr.ErrorCode() == "NoSuchBucket"
}

// isBucketOwned reports whether CreateBucket failed only because the caller
// already owns the bucket.
func isBucketOwned(err error) bool {
	var apiErr smithy.APIError
	return errors.As(err, &apiErr) && apiErr.ErrorCode() == "BucketAlreadyOwnedByYou"
}

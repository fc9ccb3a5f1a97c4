package gcsstore

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"syscall"

	"cloud.google.com/go/storage"
	"google.golang.org/api/googleapi"

	"github.com/basin-csi/basin/pkg/objstore"
)

// op names the operation an error came from. A 409 Conflict means
// different things for different operations, so mapErr needs to know.
type op string

const (
	opStat         op = "stat"
	opRead         op = "read"
	opList         op = "list"
	opPut          op = "put"
	opDelete       op = "delete"
	opCopy         op = "copy"
	opBucketAttrs  op = "bucket attrs"
	opCreateBucket op = "create bucket"
	opDeleteBucket op = "delete bucket"
)

// mapErr is the one place where SDK errors become objstore sentinels. The
// result wraps both the sentinel and the original error, so errors.Is works
// for the sentinel and errors.As still finds *googleapi.Error. It never
// inspects message strings.
func mapErr(o op, target string, err error) error {
	if err == nil {
		return nil
	}
	sentinel := classify(o, err)
	if sentinel == nil {
		return fmt.Errorf("gcsstore: %s %q: %w", o, target, err)
	}
	if errors.Is(err, sentinel) {
		return fmt.Errorf("gcsstore: %s %q: %w", o, target, err)
	}
	return fmt.Errorf("gcsstore: %s %q: %w: %w", o, target, sentinel, err)
}

// classify picks the sentinel for err, or nil when none applies.
func classify(o op, err error) error {
	// Errors already classified (stall reader, our own checks) stay as they are.
	for _, s := range []error{
		objstore.ErrNotFound, objstore.ErrAccessDenied, objstore.ErrPreconditionFailed,
		objstore.ErrThrottled, objstore.ErrUnavailable, objstore.ErrInvalidRange,
		objstore.ErrInvalidKey, objstore.ErrBucketNotEmpty, objstore.ErrBucketExists,
		objstore.ErrInvalidConfig,
	} {
		if errors.Is(err, s) {
			return s
		}
	}
	if errors.Is(err, storage.ErrObjectNotExist) || errors.Is(err, storage.ErrBucketNotExist) {
		return objstore.ErrNotFound
	}
	var gerr *googleapi.Error
	if errors.As(err, &gerr) {
		return classifyStatus(o, gerr.Code)
	}
	switch {
	case errors.Is(err, context.Canceled):
		// The caller gave up; that is not the store's fault. Keep
		// context.Canceled visible and add no sentinel.
		return nil
	case errors.Is(err, context.DeadlineExceeded),
		errors.Is(err, io.ErrUnexpectedEOF),
		errors.Is(err, syscall.ECONNREFUSED),
		errors.Is(err, syscall.ECONNRESET),
		errors.Is(err, syscall.EPIPE),
		errors.Is(err, net.ErrClosed):
		return objstore.ErrUnavailable
	}
	var nerr net.Error
	if errors.As(err, &nerr) {
		return objstore.ErrUnavailable
	}
	return nil
}

// classifyStatus maps an HTTP status of the JSON or XML API.
func classifyStatus(o op, code int) error {
	switch {
	case code == http.StatusNotFound:
		return objstore.ErrNotFound
	case code == http.StatusUnauthorized, code == http.StatusForbidden:
		return objstore.ErrAccessDenied
	case code == http.StatusConflict:
		switch o {
		case opCreateBucket:
			return objstore.ErrBucketExists
		case opDeleteBucket:
			return objstore.ErrBucketNotEmpty
		}
		// Object operations see 409 only when a concurrent request
		// changed the object meanwhile; trying again later is right.
		return objstore.ErrUnavailable
	case code == http.StatusPreconditionFailed:
		if o == opDeleteBucket {
			// We never send preconditions on bucket deletion. Real GCS
			// answers 409 for a non-empty bucket; fake-gcs-server answers
			// 412, so 412 here can only mean "not empty".
			return objstore.ErrBucketNotEmpty
		}
		return objstore.ErrPreconditionFailed
	case code == http.StatusRequestedRangeNotSatisfiable:
		return objstore.ErrInvalidRange
	case code == http.StatusTooManyRequests:
		return objstore.ErrThrottled
	case code == http.StatusRequestTimeout, code >= 500 && code <= 599:
		return objstore.ErrUnavailable
	}
	return nil
}

package main

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/basin-csi/basin/pkg/mountspec"
	"github.com/basin-csi/basin/pkg/objstore"
)

// maxCheckTimeout bounds the check below also when --op-timeout is longer,
// so that a node plugin's stage (which waits 60 s for the process to
// serve) sees the cause rather than its own timeout.
const maxCheckTimeout = 30 * time.Second

// checkBucket lists one key under the mount's root, bounded by the spec's
// operation timeout (at most maxCheckTimeout), so that a mount the store
// will refuse fails now with a clear message rather than with ENOENT or
// EACCES on every call later. The error wraps the objstore sentinel that
// says why.
func checkBucket(ctx context.Context, store objstore.Store, s mountspec.Spec) error {
	bound := min(s.OpTimeout, maxCheckTimeout)
	ctx, cancel := context.WithTimeout(ctx, bound)
	defer cancel()
	_, err := store.List(ctx, objstore.ListOptions{Delimiter: "/", MaxKeys: 1})
	if err == nil {
		return nil
	}
	where := s.SourceURL()
	if s.Endpoint != "" {
		where += " at " + s.Endpoint
	}
	switch {
	case errors.Is(err, objstore.ErrAccessDenied):
		return fmt.Errorf("%s: the store refused the credentials (check the secret's keys and the bucket's policy): %w", where, err)
	case errors.Is(err, objstore.ErrNotFound):
		return fmt.Errorf("%s: the bucket does not exist: %w", where, err)
	case ctx.Err() != nil && errors.Is(err, context.DeadlineExceeded):
		return fmt.Errorf("%s: the store could not be reached within %v (--op-timeout, at most %v): %w: %w", where, bound, maxCheckTimeout, objstore.ErrUnavailable, err)
	case errors.Is(err, objstore.ErrUnavailable), errors.Is(err, objstore.ErrThrottled):
		return fmt.Errorf("%s: the store cannot be reached: %w", where, err)
	}
	return fmt.Errorf("%s: checking the bucket: %w", where, err)
}

// exitCoder is an error that carries the exit code of the command.
type exitCoder struct {
	error
	code int
}

func (e exitCoder) ExitCode() int { return e.code }
func (e exitCoder) Unwrap() error { return e.error }

// withExitCode gives err the mount command's exit code
// (mountspec.ExitCode: the one mapping from causes to codes).
func withExitCode(err error) error {
	if err == nil {
		return nil
	}
	return exitCoder{err, mountspec.ExitCode(err)}
}

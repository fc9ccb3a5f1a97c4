package main

import (
	"context"
	"errors"
	"fmt"

	"github.com/basin-csi/basin/pkg/mountspec"
	"github.com/basin-csi/basin/pkg/objstore"
)

// checkBucket lists one key under the mount's root, bounded by the spec's
// operation timeout, so that a mount the store will refuse fails now with
// a clear message rather than with ENOENT or EACCES on every call later.
// The error wraps the objstore sentinel that says why.
func checkBucket(ctx context.Context, store objstore.Store, s mountspec.Spec) error {
	ctx, cancel := context.WithTimeout(ctx, s.OpTimeout)
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
		return fmt.Errorf("%s: the store did not answer within --op-timeout %v: %w: %w", where, s.OpTimeout, objstore.ErrUnavailable, err)
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

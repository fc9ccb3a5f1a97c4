package objstore

import (
	"context"
	"fmt"
	"io"
	"sync/atomic"
	"time"
)

// stallReader fails a body read that makes no progress for longer than
// timeout, by cancelling the request's context, so a half-dead connection
// surfaces as ErrUnavailable instead of blocking a FUSE read forever.
type stallReader struct {
	// constant
	body    io.ReadCloser
	timeout time.Duration
	cancel  context.CancelFunc
	timer   *time.Timer

	stalled atomic.Bool
}

// NewStallReader wraps body, read under a context whose cancel func is
// given. Close also releases the context.
func NewStallReader(body io.ReadCloser, timeout time.Duration, cancel context.CancelFunc) io.ReadCloser {
	r := &stallReader{body: body, timeout: timeout, cancel: cancel}
	r.timer = time.AfterFunc(timeout, func() {
		r.stalled.Store(true)
		cancel()
	})
	r.timer.Stop()
	return r
}

func (r *stallReader) Read(p []byte) (int, error) {
	if r.stalled.Load() {
		return 0, fmt.Errorf("%w: read stalled for %v", ErrUnavailable, r.timeout)
	}
	r.timer.Reset(r.timeout)
	n, err := r.body.Read(p)
	r.timer.Stop()
	if err != nil && err != io.EOF && r.stalled.Load() {
		return n, fmt.Errorf("%w: read stalled for %v", ErrUnavailable, r.timeout)
	}
	return n, err
}

func (r *stallReader) Close() error {
	r.timer.Stop()
	err := r.body.Close()
	r.cancel()
	return err
}

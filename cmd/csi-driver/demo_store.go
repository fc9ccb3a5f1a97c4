package main

import (
	"context"
	"io"
	"sync/atomic"
	"time"

	"github.com/basin-csi/basin/pkg/objstore"
)

// slowStore makes a local-directory bucket behave like a remote one for the
// demo: every request waits latency before it starts, and requests and
// downloaded bytes are counted.
type slowStore struct {
	objstore.Store
	latency time.Duration

	requests atomic.Int64
	bytes    atomic.Int64
}

func (s *slowStore) wait(ctx context.Context) error {
	s.requests.Add(1)
	t := time.NewTimer(s.latency)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (s *slowStore) Stat(ctx context.Context, key string) (objstore.ObjectInfo, error) {
	if err := s.wait(ctx); err != nil {
		return objstore.ObjectInfo{}, err
	}
	return s.Store.Stat(ctx, key)
}

func (s *slowStore) List(ctx context.Context, opts objstore.ListOptions) (objstore.ListPage, error) {
	if err := s.wait(ctx); err != nil {
		return objstore.ListPage{}, err
	}
	return s.Store.List(ctx, opts)
}

func (s *slowStore) Read(ctx context.Context, key string, opts objstore.ReadOptions) (io.ReadCloser, objstore.ObjectInfo, error) {
	if err := s.wait(ctx); err != nil {
		return nil, objstore.ObjectInfo{}, err
	}
	rc, info, err := s.Store.Read(ctx, key, opts)
	if err != nil {
		return nil, info, err
	}
	return countingReader{rc, &s.bytes}, info, nil
}

// countingReader adds what it reads to n.
type countingReader struct {
	io.ReadCloser
	n *atomic.Int64
}

func (r countingReader) Read(p []byte) (int, error) {
	n, err := r.ReadCloser.Read(p)
	r.n.Add(int64(n))
	return n, err
}

var _ objstore.MetadataSetter = (*slowStore)(nil)

// SetMetadata forwards after the latency, so chmod, chown and touch work
// in the demo as on a remote bucket.
func (s *slowStore) SetMetadata(ctx context.Context, key string, meta map[string]string, ifVersion string) (objstore.ObjectInfo, error) {
	if err := s.wait(ctx); err != nil {
		return objstore.ObjectInfo{}, err
	}
	return objstore.SetMetadataOf(ctx, s.Store, key, meta, ifVersion)
}

package objstoretest

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/basin-csi/basin/pkg/objstore"
)

// FakeAdmin is an in-memory objstore.Admin whose buckets are Fakes. Like
// Fake it counts calls and fails them on request.
type FakeAdmin struct {
	calls sync.Map // Op -> *atomic.Int64

	mu sync.Mutex
	// guarded by mu
	buckets map[string]*Fake
	foreign map[string]bool // names taken by "another owner"
	errs    map[Op]error
}

var _ objstore.Admin = (*FakeAdmin)(nil)

// NewFakeAdmin returns an admin without buckets.
func NewFakeAdmin() *FakeAdmin {
	return &FakeAdmin{buckets: make(map[string]*Fake), foreign: make(map[string]bool), errs: make(map[Op]error)}
}

// Bucket returns the store of a bucket created through the admin.
func (a *FakeAdmin) Bucket(name string) (*Fake, bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	f, ok := a.buckets[name]
	return f, ok
}

// SetForeign marks name as a bucket owned by someone else: it exists, and
// CreateBucket fails with ErrBucketExists.
func (a *FakeAdmin) SetForeign(name string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.foreign[name] = true
}

// SetError makes every later call of op fail with err (nil clears it).
func (a *FakeAdmin) SetError(op Op, err error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if err == nil {
		delete(a.errs, op)
		return
	}
	a.errs[op] = err
}

// Calls returns how many calls of op were started.
func (a *FakeAdmin) Calls(op Op) int64 {
	if c, ok := a.calls.Load(op); ok {
		return c.(*atomic.Int64).Load()
	}
	return 0
}

func (a *FakeAdmin) begin(ctx context.Context, op Op, bucket string) error {
	c, _ := a.calls.LoadOrStore(op, new(atomic.Int64))
	c.(*atomic.Int64).Add(1)
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("objstoretest: %s %q: %w", op, bucket, err)
	}
	if bucket == "" {
		return fmt.Errorf("objstoretest: %s: empty bucket name: %w", op, objstore.ErrInvalidConfig)
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if err := a.errs[op]; err != nil {
		return fmt.Errorf("objstoretest: %s %q: %w", op, bucket, err)
	}
	return nil
}

// BucketExists implements objstore.Admin.
func (a *FakeAdmin) BucketExists(ctx context.Context, bucket string) (bool, error) {
	if err := a.begin(ctx, OpBucketExists, bucket); err != nil {
		return false, err
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	_, ok := a.buckets[bucket]
	return ok || a.foreign[bucket], nil
}

// CreateBucket implements objstore.Admin.
func (a *FakeAdmin) CreateBucket(ctx context.Context, bucket string) error {
	if err := a.begin(ctx, OpCreateBucket, bucket); err != nil {
		return err
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.foreign[bucket] {
		return fmt.Errorf("objstoretest: create bucket %q: %w", bucket, objstore.ErrBucketExists)
	}
	if _, ok := a.buckets[bucket]; !ok {
		a.buckets[bucket] = NewFake()
	}
	return nil
}

// DeleteBucket implements objstore.Admin.
func (a *FakeAdmin) DeleteBucket(ctx context.Context, bucket string) error {
	if err := a.begin(ctx, OpDeleteBucket, bucket); err != nil {
		return err
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	f, ok := a.buckets[bucket]
	if !ok {
		return nil
	}
	if len(f.Keys()) > 0 {
		return fmt.Errorf("objstoretest: delete bucket %q: %w", bucket, objstore.ErrBucketNotEmpty)
	}
	delete(a.buckets, bucket)
	return nil
}

// Close implements objstore.Admin.
func (a *FakeAdmin) Close() error { return nil }

package fuse

import (
	"bytes"
	"context"
	"io"
	"os"
	"sync/atomic"
	"syscall"
	"testing"

	"github.com/basin-csi/basin/pkg/objstore"
)

// retriedClaimStore stores the first conditional create it is asked for
// and then answers ErrExists, as the store client does when the answer to
// a claim is lost and its retry meets the first attempt's object.
type retriedClaimStore struct {
	objstore.Store
	retried atomic.Bool
}

func (s *retriedClaimStore) Put(ctx context.Context, key string, body io.Reader, opts objstore.PutOptions) (objstore.ObjectInfo, error) {
	info, err := s.Store.Put(ctx, key, body, opts)
	if err == nil && opts.IfAbsent && s.retried.CompareAndSwap(false, true) {
		return objstore.ObjectInfo{}, objstore.ErrExists
	}
	return info, err
}

// TestExclusiveCreateRetriedByTheClient: an exclusive create whose claim
// was stored but answered ErrExists by the store client's retry succeeds
// (the claim is its own), the file is written and closed, and a second
// exclusive create of the name still fails with EEXIST.
func TestExclusiveCreateRetriedByTheClient(t *testing.T) {
	fstore, _ := newFileStore(t)
	store := &retriedClaimStore{Store: fstore}
	m := mountStore(t, store, mountSpec{})
	data := []byte("a checkpoint shard\n")
	f, err := within(t, "exclusive create", func() (*os.File, error) {
		return os.OpenFile(path(m, "shard"), os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	})
	if err != nil {
		t.Fatalf("exclusive create of a fresh name whose claim the client retried: %v", err)
	}
	if !store.retried.Load() {
		t.Fatal("the store never answered the claim with ErrExists: the test did not test")
	}
	if _, err := f.Write(data); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	rc, _, err := fstore.Read(t.Context(), "shard", objstore.ReadOptions{Length: -1})
	if err != nil {
		t.Fatal(err)
	}
	got, _ := io.ReadAll(rc)
	_ = rc.Close()
	if !bytes.Equal(got, data) {
		t.Errorf("the bucket holds %q, want %q", got, data)
	}
	_, err = within(t, "second exclusive create", func() (*os.File, error) {
		return os.OpenFile(path(m, "shard"), os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	})
	if errnoOf(err) != syscall.EEXIST {
		t.Errorf("second exclusive create: %v, want EEXIST", err)
	}
}

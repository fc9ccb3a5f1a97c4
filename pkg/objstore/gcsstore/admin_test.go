package gcsstore

import (
	"errors"
	"strings"
	"testing"

	"github.com/basin-csi/basin/pkg/objstore"
)

func TestAdmin(t *testing.T) {
	ctx := t.Context()
	a := newAdminAt(t, sharedEndpoint(t))
	bucket := bucketName(t)

	if ok, err := a.BucketExists(ctx, bucket); err != nil || ok {
		t.Fatalf("BucketExists(new name) = %v, %v", ok, err)
	}
	if err := a.DeleteBucket(ctx, bucket); err != nil {
		t.Errorf("DeleteBucket(missing) = %v, want nil", err)
	}
	if err := a.CreateBucket(ctx, bucket); err != nil {
		t.Fatalf("CreateBucket: %v", err)
	}
	if ok, err := a.BucketExists(ctx, bucket); err != nil || !ok {
		t.Errorf("BucketExists after create = %v, %v", ok, err)
	}
	// Creating it again: a 409 for a bucket we can read is "ours".
	if err := a.CreateBucket(ctx, bucket); err != nil {
		t.Errorf("CreateBucket again = %v, want nil", err)
	}

	s, err := New(ctx, testConfig(sharedEndpoint(t), bucket), objstore.Credentials{})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = s.Close() }()
	if _, err := s.Put(ctx, "obj", strings.NewReader("x"), objstore.PutOptions{Size: 1}); err != nil {
		t.Fatal(err)
	}
	// fake-gcs-server answers 412 here, GCS 409; both mean not empty.
	if err := a.DeleteBucket(ctx, bucket); !errors.Is(err, objstore.ErrBucketNotEmpty) {
		t.Errorf("DeleteBucket(non-empty) = %v, want ErrBucketNotEmpty", err)
	}
	if err := s.Delete(ctx, "obj"); err != nil {
		t.Fatal(err)
	}
	if err := a.DeleteBucket(ctx, bucket); err != nil {
		t.Errorf("DeleteBucket(empty) = %v", err)
	}
	if ok, err := a.BucketExists(ctx, bucket); err != nil || ok {
		t.Errorf("BucketExists after delete = %v, %v", ok, err)
	}
}

func TestAdminInvalidBucketName(t *testing.T) {
	a := newAdminAt(t, sharedEndpoint(t))
	err := a.CreateBucket(t.Context(), "Invalid_Bucket_Name!")
	if err == nil {
		t.Fatal("CreateBucket with an invalid name succeeded")
	}
	if objstore.IsRetryable(err) {
		t.Errorf("invalid bucket name reported as retryable: %v", err)
	}
}

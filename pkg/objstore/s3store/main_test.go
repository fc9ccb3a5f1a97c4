package s3store

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"os"
	"testing"
	"time"

	"github.com/basin-csi/basin/internal/testserver"
	"github.com/basin-csi/basin/pkg/objstore"
)

func TestMain(m *testing.M) {
	code := m.Run()
	testserver.Shutdown()
	os.Exit(code)
}

// minioConfig addresses the shared MinIO server as backend.
func minioConfig(srv *testserver.Server, backend objstore.Backend, bucket string) objstore.Config {
	return objstore.Config{
		Backend:   backend,
		Bucket:    bucket,
		Endpoint:  srv.Endpoint,
		Region:    srv.Region,
		PathStyle: true,
		PartSize:  5 << 20, // the minimum, so multipart is cheap to exercise
	}
}

func minioCreds(srv *testserver.Server) objstore.Credentials {
	return objstore.Credentials{AccessKeyID: srv.AccessKey, SecretAccessKey: srv.SecretKey}
}

// newBucket creates a fresh bucket on srv through Admin and removes it,
// with its objects, at cleanup.
func newBucket(t testing.TB, srv *testserver.Server) string {
	t.Helper()
	var b [6]byte
	_, _ = rand.Read(b[:])
	bucket := "basin-" + hex.EncodeToString(b[:])
	admin, err := NewAdmin(t.Context(), minioConfig(srv, objstore.BackendS3, ""), minioCreds(srv))
	if err != nil {
		t.Fatal(err)
	}
	if err := admin.CreateBucket(t.Context(), bucket); err != nil {
		t.Fatalf("CreateBucket(%s): %v", bucket, err)
	}
	t.Cleanup(func() {
		defer func() { _ = admin.Close() }()
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		s, err := New(ctx, minioConfig(srv, objstore.BackendS3, bucket), minioCreds(srv))
		if err != nil {
			t.Errorf("cleanup: %v", err)
			return
		}
		defer func() { _ = s.Close() }()
		if _, err := s.DeletePrefix(ctx, ""); err != nil {
			t.Errorf("cleanup: empty %s: %v", bucket, err)
		}
		if err := admin.DeleteBucket(ctx, bucket); err != nil {
			t.Errorf("cleanup: delete %s: %v", bucket, err)
		}
	})
	return bucket
}

// storeMode picks the SDK settings a test store gets.
type storeMode int

const (
	// asConfigured: what New chooses (MinIO is not AWS: "when required"
	// checksums).
	asConfigured storeMode = iota
	// asAWS: Amazon S3's settings (the SDK's flexible checksums).
	asAWS
)

// newMinIOStore returns a Store on a fresh bucket of the shared MinIO, for
// backend (s3, or oss standing in for Alibaba OSS), closed at cleanup.
func newMinIOStore(t testing.TB, backend objstore.Backend, mode storeMode, tune func(*objstore.Config)) *Store {
	t.Helper()
	srv := testserver.MinIO(t)
	cfg := minioConfig(srv, backend, newBucket(t, srv))
	if tune != nil {
		tune(&cfg)
	}
	awsMode := isAWS
	if mode == asAWS {
		awsMode = func(objstore.Config) bool { return true }
	}
	s, err := newStore(t.Context(), cfg, minioCreds(srv), awsMode)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

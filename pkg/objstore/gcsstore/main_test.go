package gcsstore

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

// testPartSize is small so that modest bodies take the resumable path.
const testPartSize = 256 << 10

// testConfig is a Config for the emulator at endpoint.
func testConfig(endpoint, bucket string) objstore.Config {
	return objstore.Config{
		Backend:        objstore.BackendGCS,
		Bucket:         bucket,
		Endpoint:       endpoint,
		RequestTimeout: 10 * time.Second,
		MaxAttempts:    3,
		PartSize:       testPartSize,
	}
}

// sharedEndpoint is the test binary's shared fake-gcs-server (filesystem
// backend) from testserver.
func sharedEndpoint(t testing.TB) string {
	t.Helper()
	return testserver.GCS(t).Endpoint
}

// newAdminAt returns an Admin on the emulator at endpoint, closed at cleanup.
func newAdminAt(t testing.TB, endpoint string) *Admin {
	t.Helper()
	a, err := NewAdmin(t.Context(), testConfig(endpoint, ""), objstore.Credentials{})
	if err != nil {
		t.Fatalf("NewAdmin: %v", err)
	}
	t.Cleanup(func() { _ = a.Close() })
	return a
}

// bucketName returns a fresh, valid bucket name.
func bucketName(t testing.TB) string {
	t.Helper()
	var b [6]byte
	if _, err := rand.Read(b[:]); err != nil {
		t.Fatal(err)
	}
	return "basin-test-" + hex.EncodeToString(b[:])
}

// newTestStore creates a fresh bucket on the shared emulator and a Store on
// it; both go away at cleanup.
func newTestStore(t testing.TB) *Store { return newTestStoreAt(t, sharedEndpoint(t)) }

// newTestStoreAt is newTestStore on the emulator at endpoint.
func newTestStoreAt(t testing.TB, endpoint string) *Store {
	t.Helper()
	ctx := context.Background() // cleanup runs after t.Context is done
	admin := newAdminAt(t, endpoint)
	bucket := bucketName(t)
	if err := admin.CreateBucket(ctx, bucket); err != nil {
		t.Fatalf("CreateBucket: %v", err)
	}
	s, err := New(ctx, testConfig(endpoint, bucket), objstore.Credentials{})
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	t.Cleanup(func() {
		if _, err := s.DeletePrefix(ctx, ""); err != nil {
			t.Errorf("cleanup DeletePrefix: %v", err)
		}
		if err := admin.DeleteBucket(ctx, bucket); err != nil {
			t.Errorf("cleanup DeleteBucket: %v", err)
		}
		_ = s.Close()
	})
	return s
}

package s3store

import (
	"bytes"
	"errors"
	"os"
	"testing"

	"github.com/basin-csi/basin/internal/testserver"
	"github.com/basin-csi/basin/pkg/objstore"
)

// caBundle is the environment's AWS_CA_BUNDLE, or the system bundle where
// the environment sets none.
func caBundle(t *testing.T) string {
	t.Helper()
	for _, p := range []string{os.Getenv("AWS_CA_BUNDLE"), os.Getenv("SSL_CERT_FILE"), "/etc/ssl/certs/ca-certificates.crt"} {
		if p == "" {
			continue
		}
		if _, err := os.Stat(p); err == nil {
			return p
		}
	}
	testserver.Unavailable(t, "no CA bundle file found for AWS_CA_BUNDLE")
	return ""
}

// TestCABundle: the SDK adds AWS_CA_BUNDLE to its HTTP client; the client
// must work against MinIO (plain http) with the variable set and unset, and
// the variable must really be read (a missing file is an error).
func TestCABundle(t *testing.T) {
	srv := testserver.MinIO(t)
	bucket := newBucket(t, srv)
	cases := []struct {
		name    string
		bundle  string // "" unsets the variable
		wantErr error
	}{
		{name: "set", bundle: caBundle(t)},
		{name: "unset"},
		{name: "missing file", bundle: "/nonexistent/ca.pem", wantErr: objstore.ErrInvalidConfig},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Setenv("AWS_CA_BUNDLE", c.bundle)
			if c.bundle == "" {
				// t.Setenv restores the variable at cleanup.
				if err := os.Unsetenv("AWS_CA_BUNDLE"); err != nil {
					t.Fatal(err)
				}
			}
			s, err := New(t.Context(), minioConfig(srv, objstore.BackendS3, bucket), minioCreds(srv))
			if c.wantErr != nil {
				if !errors.Is(err, c.wantErr) {
					t.Fatalf("New: %v, want %v", err, c.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			defer func() { _ = s.Close() }()
			key := "ca/" + c.name
			if _, err := s.Put(t.Context(), key, bytes.NewReader([]byte(c.name)), objstore.PutOptions{Size: int64(len(c.name))}); err != nil {
				t.Fatalf("Put: %v", err)
			}
			got, _, err := readAll(t, s, key, objstore.ReadOptions{Length: -1})
			if err != nil || string(got) != c.name {
				t.Fatalf("Read = %q, %v", got, err)
			}
			admin, err := NewAdmin(t.Context(), minioConfig(srv, objstore.BackendOSS, ""), minioCreds(srv))
			if err != nil {
				t.Fatal(err)
			}
			defer func() { _ = admin.Close() }()
			if ok, err := admin.BucketExists(t.Context(), bucket); !ok || err != nil {
				t.Errorf("BucketExists = %v, %v", ok, err)
			}
		})
	}
}

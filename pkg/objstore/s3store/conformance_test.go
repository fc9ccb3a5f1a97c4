package s3store

import (
	"testing"

	"github.com/basin-csi/basin/internal/testserver"
	"github.com/basin-csi/basin/pkg/objstore"
	"github.com/basin-csi/basin/pkg/objstore/objstoretest"
)

func harness(backend objstore.Backend, mode storeMode) objstoretest.Harness {
	return objstoretest.Harness{
		NewStore: func(t *testing.T) objstore.Store { return newMinIOStore(t, backend, mode, nil) },
		NewDeniedStore: func(t *testing.T) objstore.Store {
			srv := testserver.MinIO(t)
			cfg := minioConfig(srv, backend, newBucket(t, srv))
			s, err := New(t.Context(), cfg, objstore.Credentials{AccessKeyID: "basin-denied", SecretAccessKey: "not-the-secret-key"})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = s.Close() })
			return s
		},
	}
}

func TestConformanceS3(t *testing.T) {
	objstoretest.RunConformance(t, harness(objstore.BackendS3, asConfigured))
}

// TestConformanceS3AWSChecksums runs the settings used for Amazon S3 itself
// (the SDK's flexible checksums), which MinIO also implements.
func TestConformanceS3AWSChecksums(t *testing.T) {
	objstoretest.RunConformance(t, harness(objstore.BackendS3, asAWS))
}

// TestConformanceOSS runs the OSS configuration (region handling, "when
// required" checksums) against MinIO, which stands in for OSS's
// S3-compatible API; path-style because MinIO serves no bucket subdomains.
func TestConformanceOSS(t *testing.T) {
	objstoretest.RunConformance(t, harness(objstore.BackendOSS, asConfigured))
}

package gcsstore

import (
	"testing"

	"github.com/basin-csi/basin/internal/testserver"
	"github.com/basin-csi/basin/pkg/objstore"
	"github.com/basin-csi/basin/pkg/objstore/objstoretest"
)

// TestConformanceGCS runs the shared suite against fake-gcs-server with a
// 256 KiB part size, so every body above 256 KiB takes the resumable,
// multi-chunk upload path. fake-gcs-server has no access control, hence no
// NewDeniedStore; TestErrorMapping covers 401/403.
func TestConformanceGCS(t *testing.T) {
	endpoint := testserver.GCS(t).Endpoint
	objstoretest.RunConformance(t, objstoretest.Harness{
		NewStore: func(t *testing.T) objstore.Store { return newTestStoreAt(t, endpoint) },
	})
}

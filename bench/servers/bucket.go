package servers

import (
	"context"
	"fmt"

	"github.com/basin-csi/basin/pkg/objstore"
	"github.com/basin-csi/basin/pkg/objstore/backend"
)

// OpenBucket creates the bucket oc names if needed and opens it.
func OpenBucket(ctx context.Context, oc objstore.Config, creds objstore.Credentials) (objstore.Store, error) {
	admin, err := backend.OpenAdmin(ctx, oc, creds)
	if err != nil {
		return nil, err
	}
	defer func() { _ = admin.Close() }()
	if err := admin.CreateBucket(ctx, oc.Bucket); err != nil {
		return nil, fmt.Errorf("create bucket %s: %w", oc.Bucket, err)
	}
	return backend.Open(ctx, oc, creds)
}

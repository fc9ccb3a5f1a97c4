package backend

import (
	"context"
	"fmt"

	"github.com/basin-csi/basin/pkg/objstore"
	"github.com/basin-csi/basin/pkg/objstore/filestore"
	"github.com/basin-csi/basin/pkg/objstore/gcsstore"
	"github.com/basin-csi/basin/pkg/objstore/s3store"
)

// Open validates cfg, fills in its defaults and returns a Store for its
// bucket. The file backend takes no credentials and ignores creds.
//
// Each case returns only after checking err, so that a failed constructor's
// nil pointer never becomes a non-nil interface.
func Open(ctx context.Context, cfg objstore.Config, creds objstore.Credentials) (objstore.Store, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg = cfg.WithDefaults()
	switch cfg.Backend {
	case objstore.BackendS3, objstore.BackendOSS:
		s, err := s3store.New(ctx, cfg, creds)
		if err != nil {
			return nil, err
		}
		return s, nil
	case objstore.BackendGCS:
		s, err := gcsstore.New(ctx, cfg, creds)
		if err != nil {
			return nil, err
		}
		return s, nil
	case objstore.BackendFile:
		s, err := filestore.New(cfg)
		if err != nil {
			return nil, err
		}
		return s, nil
	}
	return nil, fmt.Errorf("%w: backend %q", objstore.ErrInvalidConfig, cfg.Backend)
}

// OpenAdmin is Open for bucket management. For the file backend, cfg.Bucket
// is the directory whose subdirectories are the buckets.
func OpenAdmin(ctx context.Context, cfg objstore.Config, creds objstore.Credentials) (objstore.Admin, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg = cfg.WithDefaults()
	switch cfg.Backend {
	case objstore.BackendS3, objstore.BackendOSS:
		a, err := s3store.NewAdmin(ctx, cfg, creds)
		if err != nil {
			return nil, err
		}
		return a, nil
	case objstore.BackendGCS:
		a, err := gcsstore.NewAdmin(ctx, cfg, creds)
		if err != nil {
			return nil, err
		}
		return a, nil
	case objstore.BackendFile:
		a, err := filestore.NewAdmin(cfg)
		if err != nil {
			return nil, err
		}
		return a, nil
	}
	return nil, fmt.Errorf("%w: backend %q", objstore.ErrInvalidConfig, cfg.Backend)
}

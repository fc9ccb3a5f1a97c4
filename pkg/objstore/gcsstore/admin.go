package gcsstore

import (
	"context"
	"errors"
	"fmt"

	"cloud.google.com/go/storage"

	"github.com/basin-csi/basin/pkg/objstore"
)

// Admin manages GCS buckets. It is safe for concurrent use.
type Admin struct {
	// constant
	cfg    objstore.Config
	client *storage.Client
	// project owns the buckets CreateBucket makes: Config.Project, else the
	// credentials JSON's project_id, else $GOOGLE_CLOUD_PROJECT read by NewAdmin. It may be
	// empty against an emulator, which ignores it.
	project string
}

var _ objstore.Admin = (*Admin)(nil)

// NewAdmin returns an Admin; cfg.Bucket may be empty. cfg.Region, when
// set, is the location of the buckets CreateBucket makes (GCS's default,
// the US multi-region, otherwise).
func NewAdmin(ctx context.Context, cfg objstore.Config, creds objstore.Credentials) (*Admin, error) {
	cfg, err := checkConfig(cfg, false)
	if err != nil {
		return nil, err
	}
	client, _, project, err := newClient(ctx, cfg, creds)
	if err != nil {
		return nil, err
	}
	switch {
	case cfg.Project != "":
		project = cfg.Project
	case project == "":
		project = projectFromEnv()
	}
	return &Admin{cfg: cfg, client: client, project: project}, nil
}

// Close releases the client.
func (a *Admin) Close() error { return a.client.Close() }

// BucketExists reports whether the bucket exists and is visible to us.
func (a *Admin) BucketExists(ctx context.Context, bucket string) (bool, error) {
	ctx, cancel := context.WithTimeout(ctx, a.cfg.RequestTimeout)
	defer cancel()
	_, err := a.client.Bucket(bucket).Attrs(ctx)
	err = mapErr(opBucketAttrs, bucket, err)
	switch {
	case err == nil:
		return true, nil
	case errors.Is(err, objstore.ErrNotFound):
		return false, nil
	}
	return false, err
}

// CreateBucket creates the bucket in the Admin's project, with uniform
// bucket-level access and public access prevention enforced.
//
// GCS answers 409 both when the name is taken by someone else and when we
// created the bucket before, and tells the two apart only in the message
// text. So on 409 we read the bucket's metadata: if our credentials may
// (storage.buckets.get), the bucket is treated as ours and CreateBucket
// succeeds; otherwise it is ErrBucketExists. A readable bucket of another
// project therefore counts as ours.
func (a *Admin) CreateBucket(ctx context.Context, bucket string) error {
	if a.project == "" && a.cfg.Endpoint == "" {
		return fmt.Errorf("%w: gcsstore: creating bucket %q needs a project: the credentials JSON has no project_id and $%s is unset",
			objstore.ErrInvalidConfig, bucket, projectEnv)
	}
	ctx, cancel := context.WithTimeout(ctx, a.cfg.RequestTimeout)
	defer cancel()
	attrs := &storage.BucketAttrs{
		Location:                 a.cfg.Region,
		UniformBucketLevelAccess: storage.UniformBucketLevelAccess{Enabled: true},
		PublicAccessPrevention:   storage.PublicAccessPreventionEnforced,
	}
	err := mapErr(opCreateBucket, bucket, a.client.Bucket(bucket).Create(ctx, a.project, attrs))
	if !errors.Is(err, objstore.ErrBucketExists) {
		return err
	}
	if _, aerr := a.client.Bucket(bucket).Attrs(ctx); aerr == nil {
		return nil
	}
	return err
}

// DeleteBucket deletes an empty bucket; a missing one is not an error.
func (a *Admin) DeleteBucket(ctx context.Context, bucket string) error {
	ctx, cancel := context.WithTimeout(ctx, a.cfg.RequestTimeout)
	defer cancel()
	err := mapErr(opDeleteBucket, bucket, a.client.Bucket(bucket).Delete(ctx))
	if errors.Is(err, objstore.ErrNotFound) {
		return nil
	}
	return err
}

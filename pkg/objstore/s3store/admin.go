package s3store

import (
	"context"
	"errors"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"

	"github.com/basin-csi/basin/pkg/objstore"
)

// Admin manages the buckets of one S3 or OSS account. It implements
// objstore.Admin.
type Admin struct {
	// constant
	c *client
}

var _ objstore.Admin = (*Admin)(nil)

// NewAdmin returns an Admin; cfg.Bucket is ignored and may be empty.
func NewAdmin(ctx context.Context, cfg objstore.Config, creds objstore.Credentials) (*Admin, error) {
	cfg, err := resolveConfig(cfg, creds, false)
	if err != nil {
		return nil, err
	}
	c, err := newClient(ctx, cfg, creds, isAWS(cfg))
	if err != nil {
		return nil, err
	}
	return &Admin{c: c}, nil
}

// String names the admin without its credentials.
func (a *Admin) String() string {
	return fmt.Sprintf("s3store.Admin{backend=%s endpoint=%q}", a.c.cfg.Backend, a.c.cfg.Endpoint)
}

// Close releases pooled connections.
func (a *Admin) Close() error {
	a.c.close()
	return nil
}

// BucketExists is HeadBucket: false for a missing bucket, an error
// (ErrAccessDenied) for one we may not see.
func (a *Admin) BucketExists(ctx context.Context, bucket string) (bool, error) {
	if err := checkBucket(bucket); err != nil {
		return false, err
	}
	cctx, cancel := a.c.withTimeout(ctx)
	defer cancel()
	_, err := a.c.s3.HeadBucket(cctx, &s3.HeadBucketInput{Bucket: aws.String(bucket)})
	if err == nil {
		return true, nil
	}
	if errors.Is(classify(err), objstore.ErrNotFound) {
		return false, nil
	}
	return false, mapErr(ctx, "HeadBucket", bucket, "", err)
}

// CreateBucket creates the bucket in the configured region. A bucket the
// caller already owns is success; one owned by others is ErrBucketExists.
func (a *Admin) CreateBucket(ctx context.Context, bucket string) error {
	if err := checkBucket(bucket); err != nil {
		return err
	}
	in := &s3.CreateBucketInput{Bucket: aws.String(bucket)}
	// us-east-1 takes no location constraint; OSS places the bucket by
	// endpoint and does not take AWS region names.
	if a.c.cfg.Backend == objstore.BackendS3 && a.c.cfg.Region != "" && a.c.cfg.Region != defaultRegion {
		in.CreateBucketConfiguration = &types.CreateBucketConfiguration{
			LocationConstraint: types.BucketLocationConstraint(a.c.cfg.Region),
		}
	}
	cctx, cancel := a.c.withTimeout(ctx)
	defer cancel()
	_, err := a.c.s3.CreateBucket(cctx, in)
	if err == nil || isBucketOwned(err) {
		return nil
	}
	return mapErr(ctx, "CreateBucket", bucket, "", err)
}

// DeleteBucket removes an empty bucket; a missing one is success.
func (a *Admin) DeleteBucket(ctx context.Context, bucket string) error {
	if err := checkBucket(bucket); err != nil {
		return err
	}
	cctx, cancel := a.c.withTimeout(ctx)
	defer cancel()
	_, err := a.c.s3.DeleteBucket(cctx, &s3.DeleteBucketInput{Bucket: aws.String(bucket)})
	if err == nil || errors.Is(classify(err), objstore.ErrNotFound) {
		return nil
	}
	return mapErr(ctx, "DeleteBucket", bucket, "", err)
}

// checkBucket refuses an empty bucket name before the SDK does.
func checkBucket(bucket string) error {
	if bucket == "" {
		return fmt.Errorf("%w: s3store: empty bucket name", objstore.ErrInvalidConfig)
	}
	return nil
}

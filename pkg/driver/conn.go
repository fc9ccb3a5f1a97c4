package driver

import (
	"context"
	"errors"
	"fmt"

	"google.golang.org/grpc/codes"

	"github.com/basin-csi/basin/pkg/driver/volumeattr"
	"github.com/basin-csi/basin/pkg/objstore"
	"github.com/basin-csi/basin/pkg/objstore/backend"
)

// secretHint tells a user how to give the controller credentials.
const secretHint = "set csi.storage.k8s.io/provisioner-secret-name and csi.storage.k8s.io/provisioner-secret-namespace in the StorageClass " +
	"to a secret with keys accessKeyID and secretAccessKey (s3, oss) or gcsCredentialsJSON (gcs)"

// conn is how the controller reaches one volume's bucket.
type conn struct {
	// cfg.Bucket is the volume's bucket.
	cfg   objstore.Config
	creds objstore.Credentials
}

// credentials returns the credentials of a secret, refusing an empty one
// when the controller requires secrets. The file backend needs none.
func (c *Controller) credentials(b objstore.Backend, s volumeattr.Secrets) (objstore.Credentials, error) {
	if b != objstore.BackendFile && !s.HasCredentials() && c.cfg.RequireSecret {
		return objstore.Credentials{}, fmt.Errorf("%w: the secret holds no credentials and this controller requires them: %s", ErrMissingSecret, secretHint)
	}
	return s.Credentials(), nil
}

// connect returns the conn of an existing volume, given the endpoint the
// request supplied (secret or volume context). It refuses an endpoint
// that is not the one the volume was created in.
func (c *Controller) connect(vid volumeID, endpoint string, s volumeattr.Secrets) (conn, error) {
	if endpointFingerprint(endpoint) != vid.EndpointFP {
		if endpoint == "" {
			return conn{}, fmt.Errorf("%w: volume %s lives at a custom endpoint but the request names none: put the endpoint into the provisioner secret (key %q)",
				ErrPrecondition, vid, volumeattr.SecretEndpoint)
		}
		return conn{}, fmt.Errorf("%w: endpoint %q is not the endpoint volume %s was created in: fix key %q of the provisioner secret",
			ErrPrecondition, endpoint, vid, volumeattr.SecretEndpoint)
	}
	creds, err := c.credentials(vid.Backend, s)
	if err != nil {
		return conn{}, err
	}
	cfg := objstore.Config{Backend: vid.Backend, Bucket: vid.Bucket, Endpoint: endpoint, Region: vid.Region, PathStyle: vid.PathStyle}
	return conn{cfg: cfg, creds: creds}, nil
}

// explainCredentials says where to look when the store refused the
// credentials. When the secret held none, the default credential chain
// was used; if that found nothing, the store could not even be asked:
// that is a missing secret.
func explainCredentials(err error, b objstore.Backend, s volumeattr.Secrets) error {
	if err == nil || b == objstore.BackendFile {
		return err
	}
	if s.HasCredentials() {
		if codeOf(err) == codes.PermissionDenied {
			return fmt.Errorf("%w (check the credentials in the secret and that they may use the bucket)", err)
		}
		return err
	}
	switch codeOf(err) {
	case codes.PermissionDenied:
		return fmt.Errorf("%w (the secret holds no credentials, so the default credential chain was used; %s)", err, secretHint)
	case codes.Internal:
		return fmt.Errorf("%w: %w (the secret holds no credentials and the default credential chain failed; %s)", ErrMissingSecret, err, secretHint)
	}
	return err
}

func (cn conn) open(ctx context.Context) (objstore.Store, error) {
	return backend.Open(ctx, cn.cfg, cn.creds)
}

// bucketExists reports whether the volume's bucket exists. A file bucket
// is a directory, which opening it checks.
func (cn conn) bucketExists(ctx context.Context) (bool, error) {
	if cn.cfg.Backend == objstore.BackendFile {
		s, err := cn.open(ctx)
		if errors.Is(err, objstore.ErrNotFound) {
			return false, nil
		}
		if err != nil {
			return false, err
		}
		return true, s.Close()
	}
	admin, err := backend.OpenAdmin(ctx, cn.cfg, cn.creds)
	if err != nil {
		return false, err
	}
	defer func() { _ = admin.Close() }()
	return admin.BucketExists(ctx, cn.cfg.Bucket)
}

// ensureBucket creates the bucket unless it exists.
func (cn conn) ensureBucket(ctx context.Context, volumeName string) error {
	admin, err := backend.OpenAdmin(ctx, cn.cfg, cn.creds)
	if err != nil {
		return err
	}
	defer func() { _ = admin.Close() }()
	exists, err := admin.BucketExists(ctx, cn.cfg.Bucket)
	if err != nil || exists {
		return err
	}
	if err := admin.CreateBucket(ctx, cn.cfg.Bucket); err != nil {
		if errors.Is(err, objstore.ErrBucketExists) {
			return fmt.Errorf("bucket %q, named after volume %q, belongs to someone else: %w", cn.cfg.Bucket, volumeName, err)
		}
		return err
	}
	return nil
}

// ensureVolume makes sure the volume's bucket (and for prefix volumes its
// prefix) exists and holds the volume's record, and returns the record.
func (cn conn) ensureVolume(ctx context.Context, vid volumeID, name string, capacity int64, r capacityRange) (volumeRecord, error) {
	if vid.Provisioning == volumeattr.ProvisionBucket {
		if err := cn.ensureBucket(ctx, name); err != nil {
			return volumeRecord{}, err
		}
	} else {
		exists, err := cn.bucketExists(ctx)
		if err != nil {
			return volumeRecord{}, err
		}
		if !exists {
			return volumeRecord{}, fmt.Errorf("%w: bucket %q does not exist: create it, or let the controller create a bucket per volume (%s=%s)",
				ErrPrecondition, vid.Bucket, volumeattr.KeyProvisioning, volumeattr.ProvisionBucket)
		}
	}
	s, err := cn.open(ctx)
	if err != nil {
		return volumeRecord{}, err
	}
	defer func() { _ = s.Close() }()
	key := recordKey(vid)
	rec, found, err := readRecord(ctx, s, key)
	if err != nil {
		return volumeRecord{}, err
	}
	if found {
		if rec.Kind != recordKind || rec.Name != name {
			return volumeRecord{}, fmt.Errorf("%w: %s in bucket %q already holds something else than volume %q", ErrNameConflict, key, vid.Bucket, name)
		}
		if !fitsRange(rec.CapacityBytes, r) {
			return volumeRecord{}, fmt.Errorf("%w: volume %q exists with capacity %d bytes, outside the requested range", ErrNameConflict, name, rec.CapacityBytes)
		}
		return rec, nil
	}
	rec = volumeRecord{Kind: recordKind, Name: name, CapacityBytes: capacity}
	return rec, writeRecord(ctx, s, key, rec)
}

// volumeExists reports whether the volume's bucket, and for prefix
// volumes the prefix's marker, exist.
func (cn conn) volumeExists(ctx context.Context, vid volumeID) (bool, error) {
	exists, err := cn.bucketExists(ctx)
	if err != nil || !exists || vid.Provisioning == volumeattr.ProvisionBucket {
		return exists, err
	}
	s, err := cn.open(ctx)
	if err != nil {
		return false, err
	}
	defer func() { _ = s.Close() }()
	_, err = s.Stat(ctx, vid.Prefix)
	if errors.Is(err, objstore.ErrNotFound) {
		return false, nil
	}
	return err == nil, err
}

// deleteData removes the objects of the volume and, for bucket volumes,
// the bucket. Data that is already gone is success.
func (cn conn) deleteData(ctx context.Context, vid volumeID) error {
	s, err := cn.open(ctx)
	if errors.Is(err, objstore.ErrNotFound) {
		logDeleted(vid, 0, false)
		return nil
	}
	if err != nil {
		return err
	}
	defer func() { _ = s.Close() }()
	n, err := s.DeletePrefix(ctx, vid.Prefix)
	if errors.Is(err, objstore.ErrNotFound) {
		logDeleted(vid, n, false)
		return nil
	}
	if err != nil {
		return fmt.Errorf("delete the objects of volume %s: %w", vid, err)
	}
	if vid.Provisioning != volumeattr.ProvisionBucket {
		logDeleted(vid, n, false)
		return nil
	}
	admin, err := backend.OpenAdmin(ctx, cn.cfg, cn.creds)
	if err != nil {
		return err
	}
	defer func() { _ = admin.Close() }()
	if err := admin.DeleteBucket(ctx, vid.Bucket); err != nil {
		return fmt.Errorf("delete bucket of volume %s: %w", vid, err)
	}
	logDeleted(vid, n, true)
	return nil
}

package filestore

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/basin-csi/basin/pkg/objstore"
)

// Admin manages buckets as directories directly under a root directory.
type Admin struct {
	// constant
	root *os.Root
	dir  string
}

var _ objstore.Admin = (*Admin)(nil)

// NewAdmin serves the directories below cfg.Bucket (absolute, existing) as
// buckets.
func NewAdmin(cfg objstore.Config) (*Admin, error) {
	if cfg.Backend != "" && cfg.Backend != objstore.BackendFile {
		return nil, fmt.Errorf("filestore: backend %q: %w", cfg.Backend, objstore.ErrInvalidConfig)
	}
	root, err := openDir(cfg.Bucket)
	if err != nil {
		return nil, err
	}
	return &Admin{root: root, dir: cfg.Bucket}, nil
}

// BucketDir returns the directory of bucket, the Config.Bucket of its Store.
func (a *Admin) BucketDir(bucket string) (string, error) {
	name, err := a.name(bucket)
	if err != nil {
		return "", err
	}
	return filepath.Join(a.dir, name), nil
}

// name accepts a bucket as a plain name or as the absolute path of a
// directory directly under the root.
func (a *Admin) name(bucket string) (string, error) {
	name := bucket
	if filepath.IsAbs(bucket) {
		if filepath.Dir(filepath.Clean(bucket)) != filepath.Clean(a.dir) {
			return "", fmt.Errorf("filestore: bucket %q is not directly under %s: %w", bucket, a.dir, objstore.ErrInvalidConfig)
		}
		name = filepath.Base(bucket)
	}
	if !validName(name) {
		return "", fmt.Errorf("filestore: bucket name %q: %w", bucket, objstore.ErrInvalidConfig)
	}
	return name, nil
}

// BucketExists implements objstore.Admin.
func (a *Admin) BucketExists(ctx context.Context, bucket string) (bool, error) {
	name, err := a.name(bucket)
	if err != nil {
		return false, err
	}
	if err := ctx.Err(); err != nil {
		return false, mapErr("bucket exists", bucket, err)
	}
	fi, err := a.root.Lstat(name)
	if errors.Is(err, fs.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, mapErr("bucket exists", bucket, err)
	}
	return fi.IsDir(), nil
}

// CreateBucket implements objstore.Admin. A file of that name is a bucket
// of "another owner": ErrBucketExists.
func (a *Admin) CreateBucket(ctx context.Context, bucket string) error {
	name, err := a.name(bucket)
	if err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		return mapErr("create bucket", bucket, err)
	}
	err = a.root.Mkdir(name, dirPerm)
	if errors.Is(err, fs.ErrExist) {
		if fi, serr := a.root.Lstat(name); serr == nil && fi.IsDir() {
			return nil
		}
		return fmt.Errorf("filestore: create bucket %q: not a directory: %w", bucket, objstore.ErrBucketExists)
	}
	if err != nil {
		return mapErr("create bucket", bucket, err)
	}
	if d, err := a.root.Open("."); err == nil {
		_ = d.Sync()
		_ = d.Close()
	}
	return nil
}

// DeleteBucket implements objstore.Admin. Leftovers that are not objects
// (empty directories, temporary files) do not keep a bucket alive.
func (a *Admin) DeleteBucket(ctx context.Context, bucket string) error {
	name, err := a.name(bucket)
	if err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		return mapErr("delete bucket", bucket, err)
	}
	fi, err := a.root.Lstat(name)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return mapErr("delete bucket", bucket, err)
	}
	if !fi.IsDir() {
		return fmt.Errorf("filestore: delete bucket %q: not a directory: %w", bucket, objstore.ErrBucketExists)
	}
	s := &Store{root: a.root}
	has, err := s.hasObject(ctx, name)
	if err != nil {
		return mapErr("delete bucket", bucket, err)
	}
	if has {
		return fmt.Errorf("filestore: delete bucket %q: %w", bucket, objstore.ErrBucketNotEmpty)
	}
	if err := a.root.RemoveAll(name); err != nil {
		return mapErr("delete bucket", bucket, err)
	}
	return nil
}

// Close implements objstore.Admin.
func (a *Admin) Close() error { return a.root.Close() }

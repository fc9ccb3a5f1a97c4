package filestore_test

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/basin-csi/basin/pkg/objstore"
	"github.com/basin-csi/basin/pkg/objstore/filestore"
)

func TestAdmin(t *testing.T) {
	ctx := t.Context()
	root := t.TempDir()
	a, err := filestore.NewAdmin(objstore.Config{Backend: objstore.BackendFile, Bucket: root})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = a.Close() }()
	if err := os.WriteFile(filepath.Join(root, "afile"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name string
		run  func() error
		want error
	}{
		{"create", func() error { return a.CreateBucket(ctx, "vol") }, nil},
		{"create again", func() error { return a.CreateBucket(ctx, "vol") }, nil},
		{"create by path", func() error { return a.CreateBucket(ctx, filepath.Join(root, "vol2")) }, nil},
		{"create over a file", func() error { return a.CreateBucket(ctx, "afile") }, objstore.ErrBucketExists},
		{"nested name", func() error { return a.CreateBucket(ctx, "a/b") }, objstore.ErrInvalidConfig},
		{"dot dot", func() error { return a.CreateBucket(ctx, "..") }, objstore.ErrInvalidConfig},
		{"path elsewhere", func() error { return a.CreateBucket(ctx, "/tmp/elsewhere") }, objstore.ErrInvalidConfig},
		{"fill vol", func() error {
			dir, err := a.BucketDir("vol")
			if err != nil {
				return err
			}
			s, err := filestore.New(objstore.Config{Bucket: dir})
			if err != nil {
				return err
			}
			defer func() { _ = s.Close() }()
			_, err = s.Put(ctx, "deep/object", strings.NewReader("x"), objstore.PutOptions{Size: 1})
			return err
		}, nil},
		{"delete non-empty", func() error { return a.DeleteBucket(ctx, "vol") }, objstore.ErrBucketNotEmpty},
		{"delete empty with leftovers", func() error {
			if err := os.MkdirAll(filepath.Join(root, "vol2", "empty", "dir"), 0o700); err != nil {
				return err
			}
			if err := os.WriteFile(filepath.Join(root, "vol2", ".basin-tmp-1"), nil, 0o600); err != nil {
				return err
			}
			return a.DeleteBucket(ctx, "vol2")
		}, nil},
		{"delete missing", func() error { return a.DeleteBucket(ctx, "vol2") }, nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			err := c.run()
			if c.want == nil && err != nil || c.want != nil && !errors.Is(err, c.want) {
				t.Errorf("err = %v, want %v", err, c.want)
			}
		})
	}
	for bucket, want := range map[string]bool{"vol": true, "vol2": false, "afile": false, "none": false} {
		if got, err := a.BucketExists(ctx, bucket); got != want || err != nil {
			t.Errorf("BucketExists(%q) = %v, %v; want %v", bucket, got, err, want)
		}
	}
	if _, err := os.Stat(filepath.Join(root, "vol2")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("vol2 still on disk: %v", err)
	}
}

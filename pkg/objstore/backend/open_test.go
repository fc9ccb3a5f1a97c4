package backend_test

import (
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"github.com/basin-csi/basin/pkg/objstore"
	"github.com/basin-csi/basin/pkg/objstore/backend"
	"github.com/basin-csi/basin/pkg/objstore/filestore"
	"github.com/basin-csi/basin/pkg/objstore/gcsstore"
	"github.com/basin-csi/basin/pkg/objstore/s3store"
)

func TestOpenDispatch(t *testing.T) {
	dir := t.TempDir()
	keys := objstore.Credentials{AccessKeyID: "id", SecretAccessKey: "secret"}
	cases := []struct {
		name  string
		cfg   objstore.Config
		creds objstore.Credentials
		check func(objstore.Store) bool
	}{
		{"s3", objstore.Config{Backend: objstore.BackendS3, Bucket: "b", Endpoint: "http://127.0.0.1:1", Region: "us-east-1", PathStyle: true}, keys,
			func(s objstore.Store) bool { _, ok := s.(*s3store.Store); return ok }},
		{"oss", objstore.Config{Backend: objstore.BackendOSS, Bucket: "b", Endpoint: "http://127.0.0.1:1", Region: "oss-cn-hangzhou"}, keys,
			func(s objstore.Store) bool { _, ok := s.(*s3store.Store); return ok }},
		{"gcs", objstore.Config{Backend: objstore.BackendGCS, Bucket: "b", Endpoint: "http://127.0.0.1:1/storage/v1/"}, objstore.Credentials{},
			func(s objstore.Store) bool { _, ok := s.(*gcsstore.Store); return ok }},
		{"file", objstore.Config{Backend: objstore.BackendFile, Bucket: dir}, objstore.Credentials{},
			func(s objstore.Store) bool { _, ok := s.(*filestore.Store); return ok }},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s, err := backend.Open(t.Context(), c.cfg, c.creds)
			if err != nil {
				t.Fatalf("Open: %v", err)
			}
			defer func() { _ = s.Close() }()
			if !c.check(s) {
				t.Errorf("Open(%s) returned a %T", c.cfg.Backend, s)
			}
		})
	}
}

func TestOpenAdminDispatch(t *testing.T) {
	keys := objstore.Credentials{AccessKeyID: "id", SecretAccessKey: "secret"}
	for _, cfg := range []objstore.Config{
		{Backend: objstore.BackendS3, Bucket: "b", Endpoint: "http://127.0.0.1:1", Region: "us-east-1", PathStyle: true},
		{Backend: objstore.BackendGCS, Bucket: "b", Endpoint: "http://127.0.0.1:1/storage/v1/"},
		{Backend: objstore.BackendFile, Bucket: t.TempDir()},
	} {
		t.Run(string(cfg.Backend), func(t *testing.T) {
			creds := keys
			if cfg.Backend != objstore.BackendS3 {
				creds = objstore.Credentials{}
			}
			a, err := backend.OpenAdmin(t.Context(), cfg, creds)
			if err != nil {
				t.Fatalf("OpenAdmin: %v", err)
			}
			if err := a.Close(); err != nil {
				t.Error(err)
			}
		})
	}
}

func TestOpenErrors(t *testing.T) {
	dir := t.TempDir()
	cases := []struct {
		name string
		cfg  objstore.Config
		want error
	}{
		{"no backend", objstore.Config{Bucket: "b"}, objstore.ErrInvalidConfig},
		{"unknown backend", objstore.Config{Backend: "ftp", Bucket: "b"}, objstore.ErrInvalidConfig},
		{"no bucket", objstore.Config{Backend: objstore.BackendS3}, objstore.ErrInvalidConfig},
		{"negative part size", objstore.Config{Backend: objstore.BackendFile, Bucket: dir, PartSize: -1}, objstore.ErrInvalidConfig},
		{"relative dir", objstore.Config{Backend: objstore.BackendFile, Bucket: "rel"}, objstore.ErrInvalidConfig},
		{"missing dir", objstore.Config{Backend: objstore.BackendFile, Bucket: filepath.Join(dir, "missing")}, objstore.ErrNotFound},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s, err := backend.Open(t.Context(), c.cfg, objstore.Credentials{})
			if !errors.Is(err, c.want) || s != nil {
				t.Errorf("Open(%+v) = %v, %v; want nil, %v", c.cfg, s, err, c.want)
			}
			a, err := backend.OpenAdmin(t.Context(), c.cfg, objstore.Credentials{})
			if !errors.Is(err, c.want) || a != nil {
				t.Errorf("OpenAdmin(%+v) = %v, %v; want nil, %v", c.cfg, a, err, c.want)
			}
		})
	}
}

// The file backend works end to end through Open, the demo's path.
func TestOpenFileRoundTrip(t *testing.T) {
	ctx := t.Context()
	root := t.TempDir()
	a, err := backend.OpenAdmin(ctx, objstore.Config{Backend: objstore.BackendFile, Bucket: root}, objstore.Credentials{})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = a.Close() }()
	if err := a.CreateBucket(ctx, "vol"); err != nil {
		t.Fatal(err)
	}
	s, err := backend.Open(ctx, objstore.Config{Backend: objstore.BackendFile, Bucket: filepath.Join(root, "vol")}, objstore.Credentials{})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = s.Close() }()
	if _, err := s.Put(ctx, "k", strings.NewReader("v"), objstore.PutOptions{Size: 1}); err != nil {
		t.Fatal(err)
	}
	if err := a.DeleteBucket(ctx, "vol"); !errors.Is(err, objstore.ErrBucketNotEmpty) {
		t.Errorf("DeleteBucket of a bucket holding k = %v", err)
	}
}

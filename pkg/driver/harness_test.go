package driver

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"

	"github.com/basin-csi/basin/internal/testserver"
	"github.com/basin-csi/basin/pkg/driver/volumeattr"
	"github.com/basin-csi/basin/pkg/mountspec"
	"github.com/basin-csi/basin/pkg/objstore"
	"github.com/basin-csi/basin/pkg/objstore/backend"
)

// harness is a Driver served on a unix socket and a client of it.
type harness struct {
	endpoint   string
	controller csi.ControllerClient
	identity   csi.IdentityClient
}

// startDriver serves a Driver with a controller of cfg (and extra
// services) until the test ends.
func startDriver(t *testing.T, cfg ControllerConfig, extra ...Service) *harness {
	t.Helper()
	ctrl, err := NewController(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return serveDriver(t, Config{Version: "test", NodeID: "test-node"}, append([]Service{ctrl}, extra...)...)
}

// serveDriver serves a Driver of dcfg (its endpoint a fresh unix socket)
// and services until the test ends.
func serveDriver(t *testing.T, dcfg Config, services ...Service) *harness {
	t.Helper()
	dir, err := os.MkdirTemp("", "basin-csi-") // short: sun_path has 108 bytes
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	endpoint := "unix://" + filepath.Join(dir, "csi.sock")
	dcfg.Endpoint = endpoint
	d, err := New(dcfg, services...)
	if err != nil {
		t.Fatal(err)
	}
	lis, err := Listen(endpoint)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- d.Serve(ctx, lis) }()
	conn, err := grpc.NewClient(endpoint, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = conn.Close()
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Serve: %v", err)
		}
	})
	return &harness{endpoint: endpoint, controller: csi.NewControllerClient(conn), identity: csi.NewIdentityClient(conn)}
}

// wantCode fails the test unless err carries code.
func wantCode(t *testing.T, what string, err error, code codes.Code) {
	t.Helper()
	if got := status.Code(err); got != code {
		t.Errorf("%s: code %v (%v); want %v", what, got, err, code)
	}
}

// mountCap is a mount capability with the given access mode.
func mountCap(mode csi.VolumeCapability_AccessMode_Mode) *csi.VolumeCapability {
	return &csi.VolumeCapability{
		AccessType: &csi.VolumeCapability_Mount{Mount: &csi.VolumeCapability_MountVolume{}},
		AccessMode: &csi.VolumeCapability_AccessMode{Mode: mode},
	}
}

func rwx() []*csi.VolumeCapability {
	return []*csi.VolumeCapability{mountCap(csi.VolumeCapability_AccessMode_MULTI_NODE_MULTI_WRITER)}
}

// uniqueName returns prefix + a random suffix, valid as a bucket name.
func uniqueName(prefix string) string {
	b := make([]byte, 5)
	_, _ = rand.Read(b)
	return prefix + hex.EncodeToString(b)
}

// store describes one object-store setup the controller is tested on.
type store struct {
	name    string
	params  map[string]string // StorageClass parameters without provisioning keys
	secrets map[string]string // provisioner secret
	// parent is an existing bucket for provisioning=prefix.
	parent string
	// cfg and creds open the parent bucket directly (for assertions).
	cfg   objstore.Config
	creds objstore.Credentials
}

// minioStore sets up MinIO with a fresh parent bucket.
func minioStore(t *testing.T) store {
	t.Helper()
	srv := testserver.MinIO(t)
	s := store{
		name:    "minio",
		params:  map[string]string{mountspec.KeyBackend: "s3", mountspec.KeyRegion: srv.Region, mountspec.KeyPathStyle: "true"},
		secrets: map[string]string{volumeattr.SecretAccessKeyID: srv.AccessKey, volumeattr.SecretSecretAccessKey: srv.SecretKey, volumeattr.SecretEndpoint: srv.Endpoint},
		parent:  uniqueName("parent-"),
		creds:   objstore.Credentials{AccessKeyID: srv.AccessKey, SecretAccessKey: srv.SecretKey},
	}
	s.cfg = objstore.Config{Backend: objstore.BackendS3, Endpoint: srv.Endpoint, Region: srv.Region, PathStyle: true, Bucket: s.parent}
	createBucket(t, s.cfg, s.creds)
	return s
}

// gcsStore sets up fake-gcs-server with a fresh parent bucket.
func gcsStore(t *testing.T) store {
	t.Helper()
	srv := testserver.GCS(t)
	s := store{
		name:    "gcs",
		params:  map[string]string{mountspec.KeyBackend: "gcs"},
		secrets: map[string]string{volumeattr.SecretEndpoint: srv.Endpoint},
		parent:  uniqueName("parent-"),
	}
	s.cfg = objstore.Config{Backend: objstore.BackendGCS, Endpoint: srv.Endpoint, Bucket: s.parent}
	createBucket(t, s.cfg, s.creds)
	return s
}

// fileStore sets up a directory as the parent bucket.
func fileStore(t *testing.T) store {
	dir := t.TempDir()
	return store{
		name:   "file",
		params: map[string]string{mountspec.KeyBackend: "file"},
		parent: dir,
		cfg:    objstore.Config{Backend: objstore.BackendFile, Bucket: dir},
	}
}

func createBucket(t *testing.T, cfg objstore.Config, creds objstore.Credentials) {
	t.Helper()
	a, err := backend.OpenAdmin(t.Context(), cfg, creds)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = a.Close() }()
	if err := a.CreateBucket(t.Context(), cfg.Bucket); err != nil {
		t.Fatal(err)
	}
}

// with returns a copy of m with the pairs kv (key, value, ...) set; an
// empty value deletes the key.
func with(m map[string]string, kv ...string) map[string]string {
	out := make(map[string]string, len(m)+len(kv)/2)
	for k, v := range m {
		out[k] = v
	}
	for i := 0; i+1 < len(kv); i += 2 {
		if kv[i+1] == "" {
			delete(out, kv[i])
		} else {
			out[kv[i]] = kv[i+1]
		}
	}
	return out
}

// openVolume opens the store holding a volume's data (bucket + prefix),
// as the node will.
func openVolume(t *testing.T, s store, vol *csi.Volume) objstore.Store {
	t.Helper()
	a, err := volumeattr.Parse(vol.GetVolumeContext(), s.secrets)
	if err != nil {
		t.Fatalf("the VolumeContext does not parse: %v", err)
	}
	st, err := backend.Open(t.Context(), a.StoreConfig(), s.creds)
	if err != nil {
		t.Fatal(err)
	}
	return objstore.WithPrefix(st, a.Prefix)
}

func put(t *testing.T, s objstore.Store, key, body string) {
	t.Helper()
	if _, err := s.Put(t.Context(), key, strings.NewReader(body), objstore.PutOptions{Size: int64(len(body))}); err != nil {
		t.Fatal(err)
	}
}

package fuse

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/basin-csi/basin/internal/fusectl"
	"github.com/basin-csi/basin/internal/testserver"
	"github.com/basin-csi/basin/pkg/cache"
	"github.com/basin-csi/basin/pkg/cache/tier"
	"github.com/basin-csi/basin/pkg/objstore"
	"github.com/basin-csi/basin/pkg/objstore/filestore"
	"github.com/basin-csi/basin/pkg/objstore/gcsstore"
	"github.com/basin-csi/basin/pkg/objstore/s3store"
)

func TestMain(m *testing.M) {
	code := m.Run()
	testserver.Shutdown()
	os.Exit(code)
}

// syscallTimeout bounds every system call a test makes on a mount.
const syscallTimeout = 60 * time.Second

// cacheKind selects the cacheBackend of a test mount.
type cacheKind string

const (
	realCache    cacheKind = "cache"        // pkg/cache
	fakeLocal    cacheKind = "fake"         // fakeCache, whole objects local
	fakeNoLocal  cacheKind = "fake-nolocal" // fakeCache, every read from the store
	defaultCache           = realCache
)

type mountSpec struct {
	cfg   Config
	cache cacheKind
	// noPrefetch turns the real cache's directory prefetch off (it is on,
	// as in a mount); prefetchBudget is its PrefetchBudget (0: the
	// default).
	noPrefetch     bool
	prefetchBudget int64
	// now is the real cache's clock (nil: time.Now).
	now func() time.Time
	// tier is the real cache's shared cache tier (nil: none).
	tier *tier.Tier
}

type testMount struct {
	dir   string
	fsys  *FS
	m     *Mounted
	cache cacheBackend
}

func newBackend(t testing.TB, store objstore.Store, spec mountSpec) cacheBackend {
	t.Helper()
	dir := t.TempDir()
	switch spec.cache {
	case fakeLocal, fakeNoLocal:
		return newFakeCache(store, dir, spec.cfg.MetadataTTL, spec.cfg.NegativeMetadataTTL, spec.cache == fakeNoLocal)
	default:
		opts := cache.Options{Spec: spec.cfg.Spec, VolumeID: t.Name(), Origin: "test://" + t.Name(), Now: spec.now}
		opts.CacheSize, opts.CacheBlockSize = 8<<30, 1<<20
		opts.Prefetch, opts.PrefetchBudget = !spec.noPrefetch, spec.prefetchBudget
		opts.Tier = spec.tier
		c, err := cache.Open(t.Context(), dir, store, opts)
		if err != nil {
			t.Fatalf("cache.Open: %v", err)
		}
		t.Cleanup(func() { _ = c.Close() })
		return cacheAdapter{c}
	}
}

// mountStore mounts store and unmounts it at cleanup, even on failure.
func mountStore(t testing.TB, store objstore.Store, spec mountSpec) *testMount {
	t.Helper()
	testserver.RequireFUSE(t)
	if spec.cache == "" {
		spec.cache = defaultCache
	}
	backend := newBackend(t, store, spec)
	fsys, err := newFS(spec.cfg, store, backend)
	if err != nil {
		t.Fatal(err)
	}
	return mountFS(t, fsys)
}

// mountFS mounts fsys and unmounts it at cleanup, even on failure.
func mountFS(t testing.TB, fsys *FS) *testMount {
	t.Helper()
	tm, unmount := mountFSUntil(t, fsys)
	t.Cleanup(unmount)
	return tm
}

// mountFSUntil mounts fsys; the caller unmounts it with unmount.
func mountFSUntil(t testing.TB, fsys *FS) (tm *testMount, unmount func()) {
	t.Helper()
	testserver.RequireFUSE(t)
	dir := t.TempDir()
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	m, err := fsys.Mount(ctx, dir, MountOptions{FsName: "basin-test"})
	if err != nil {
		t.Fatalf("Mount: %v", err)
	}
	var st syscall.Stat_t
	if err := syscall.Stat(dir, &st); err != nil {
		t.Fatalf("stat mount: %v", err)
	}
	return &testMount{dir: dir, fsys: fsys, m: m, cache: fsys.cache}, func() { unmountOrAbort(t, m, dir, st.Dev) }
}

// unmountOrAbort unmounts; if that fails or hangs (a test left a file
// open, or the server is stuck) it aborts the FUSE connection, so no test
// leaves a mount behind nor blocks the test binary's exit on its own mount.
func unmountOrAbort(t testing.TB, m *Mounted, dir string, dev uint64) {
	done := make(chan error, 1)
	go func() { done <- m.Unmount() }()
	select {
	case err := <-done:
		if err == nil {
			return
		}
		t.Errorf("unmount %s: %v; aborting the connection", dir, err)
	case <-time.After(syscallTimeout): // requests in flight finish first, within their op timeouts
		t.Errorf("unmount %s hung; aborting the connection", dir)
	}
	if err := fusectl.Abort(dev); err != nil {
		t.Errorf("abort %s: %v", dir, err)
	}
	_ = syscall.Unmount(dir, syscall.MNT_DETACH)
}

// within runs fn (system calls on a mount) and fails the test if it does
// not return in time.
func within[T any](t testing.TB, what string, fn func() (T, error)) (T, error) {
	t.Helper()
	return withinFor(t, what, syscallTimeout, fn)
}

// withinFor is within with its own bound, for a call that makes many
// requests to the bucket by design.
func withinFor[T any](t testing.TB, what string, bound time.Duration, fn func() (T, error)) (T, error) {
	t.Helper()
	type result struct {
		v   T
		err error
	}
	ch := make(chan result, 1)
	go func() {
		v, err := fn()
		ch <- result{v, err}
	}()
	select {
	case r := <-ch:
		return r.v, r.err
	case <-time.After(bound):
		t.Fatalf("%s: no answer after %v", what, bound)
		panic("unreachable")
	}
}

// must is within for calls that must succeed.
func must[T any](t testing.TB, what string, fn func() (T, error)) T {
	t.Helper()
	v, err := within(t, what, fn)
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
	return v
}

// errnoOf extracts the errno of a failed system call.
func errnoOf(err error) syscall.Errno {
	var e syscall.Errno
	if errors.As(err, &e) {
		return e
	}
	return 0
}

// newFileStore is a filestore bucket in a temporary directory.
func newFileStore(t testing.TB) (*filestore.Store, string) {
	t.Helper()
	dir := t.TempDir()
	s, err := filestore.New(objstore.Config{Backend: objstore.BackendFile, Bucket: dir})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s, dir
}

func minioConfig(srv *testserver.Server, bucket string) objstore.Config {
	return objstore.Config{
		Backend: objstore.BackendS3, Bucket: bucket, Endpoint: srv.Endpoint, Region: srv.Region,
		PathStyle: true, PartSize: 5 << 20, RequestTimeout: 5 * time.Second, MaxAttempts: 2,
	}
}

func minioCreds(srv *testserver.Server) objstore.Credentials {
	return objstore.Credentials{AccessKeyID: srv.AccessKey, SecretAccessKey: srv.SecretKey}
}

// newMinIOBucket creates a fresh bucket on srv.
func newMinIOBucket(t testing.TB, srv *testserver.Server) string {
	t.Helper()
	var b [6]byte
	_, _ = rand.Read(b[:])
	bucket := "basin-fuse-" + hex.EncodeToString(b[:])
	admin, err := s3store.NewAdmin(t.Context(), minioConfig(srv, ""), minioCreds(srv))
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = admin.Close() }()
	if err := admin.CreateBucket(t.Context(), bucket); err != nil {
		t.Fatalf("CreateBucket: %v", err)
	}
	return bucket
}

// newMinIOStore opens a fresh bucket on srv (the shared MinIO when nil).
func newMinIOStore(t testing.TB, srv *testserver.Server) *s3store.Store {
	t.Helper()
	if srv == nil {
		srv = testserver.MinIO(t)
	}
	s, err := s3store.New(t.Context(), minioConfig(srv, newMinIOBucket(t, srv)), minioCreds(srv))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

// gcsBucketConfig creates a fresh bucket on the shared fake-gcs-server
// and returns the configuration of a client of it.
func gcsBucketConfig(t testing.TB) objstore.Config {
	t.Helper()
	srv := testserver.GCS(t)
	cfg := objstore.Config{Backend: objstore.BackendGCS, Endpoint: srv.Endpoint, RequestTimeout: 10 * time.Second, MaxAttempts: 3, PartSize: 8 << 20}
	admin, err := gcsstore.NewAdmin(t.Context(), cfg, objstore.Credentials{})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = admin.Close() }()
	var b [6]byte
	_, _ = rand.Read(b[:])
	cfg.Bucket = "basin-fuse-" + hex.EncodeToString(b[:])
	if err := admin.CreateBucket(t.Context(), cfg.Bucket); err != nil {
		t.Fatalf("CreateBucket: %v", err)
	}
	return cfg
}

// newGCSStore opens a client of cfg, closed when the test ends.
func newGCSStore(t testing.TB, cfg objstore.Config) *gcsstore.Store {
	t.Helper()
	s, err := gcsstore.New(context.Background(), cfg, objstore.Credentials{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

// put stores data under key directly in the bucket.
func put(t testing.TB, s objstore.Store, key string, data []byte) objstore.ObjectInfo {
	t.Helper()
	info, err := s.Put(t.Context(), key, bytesReader(data), objstore.PutOptions{Size: int64(len(data))})
	if err != nil {
		t.Fatalf("Put %s: %v", key, err)
	}
	return info
}

// randomBytes returns n reproducible pseudo-random bytes.
func randomBytes(n int, seed byte) []byte {
	b := make([]byte, n)
	x := uint32(seed)*2654435761 + 1
	for i := range b {
		x ^= x << 13
		x ^= x >> 17
		x ^= x << 5
		b[i] = byte(x)
	}
	return b
}

func path(m *testMount, rel string) string { return filepath.Join(m.dir, rel) }

func bytesReader(b []byte) *bytes.Reader { return bytes.NewReader(b) }

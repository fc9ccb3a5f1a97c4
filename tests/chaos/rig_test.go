package chaos

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/basin-csi/basin/internal/testserver"
	"github.com/basin-csi/basin/pkg/mountspec"
	"github.com/basin-csi/basin/pkg/objstore"
	"github.com/basin-csi/basin/pkg/objstore/s3store"
	"github.com/basin-csi/basin/pkg/supervisor"
)

func TestMain(m *testing.M) {
	if spec := os.Getenv(readerEnv); spec != "" {
		os.Exit(runReaderChild(spec))
	}
	if spec := os.Getenv(writerEnv); spec != "" {
		os.Exit(runWriterChild(spec))
	}
	if os.Getenv(burnEnv) != "" {
		os.Exit(runBurner())
	}
	serverLog.install()
	load, err := startLoad()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	code := m.Run()
	load.stop()
	testserver.Shutdown()
	os.Exit(code)
}

// bucket is a bucket of an owned MinIO holding a set of files.
type bucket struct {
	srv   *testserver.Server
	name  string
	creds objstore.Credentials
	files map[string][]byte // key → content
}

// newBucket starts a MinIO of the test's own and uploads files to a new
// bucket.
func newBucket(t *testing.T, files map[string][]byte) bucket {
	t.Helper()
	testserver.RequireFUSE(t)
	return newBucketOn(t, testserver.NewMinIO(t), files)
}

// newBucketOn uploads files to a new bucket of srv.
func newBucketOn(t *testing.T, srv *testserver.Server, files map[string][]byte) bucket {
	t.Helper()
	b := bucket{srv: srv, files: files}
	var rnd [6]byte
	_, _ = rand.Read(rnd[:])
	b.name = "basin-chaos-" + hex.EncodeToString(rnd[:])
	cfg := objstore.Config{Backend: objstore.BackendS3, Endpoint: b.srv.Endpoint, Region: b.srv.Region, PathStyle: true, PartSize: 5 << 20}
	b.creds = objstore.Credentials{AccessKeyID: b.srv.AccessKey, SecretAccessKey: b.srv.SecretKey}
	admin, err := s3store.NewAdmin(t.Context(), cfg, b.creds)
	if err != nil {
		t.Fatal(err)
	}
	if err := admin.CreateBucket(t.Context(), b.name); err != nil {
		t.Fatal(err)
	}
	_ = admin.Close()
	cfg.Bucket = b.name
	store, err := s3store.New(t.Context(), cfg, b.creds)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = store.Close() }()
	for k, v := range files {
		if _, err := store.Put(t.Context(), k, bytes.NewReader(v), objstore.PutOptions{Size: int64(len(v))}); err != nil {
			t.Fatal(err)
		}
	}
	return b
}

// rig is one staged volume over a bucket of an owned MinIO, supervised by
// a real Manager (real mount(2), real FUSE processes).
type rig struct {
	bucket
	dir     string
	staging string
	cache   string
	m       *supervisor.Manager
	req     supervisor.Request
}

// newRig uploads files and stages them. cacheSize bounds the volume's
// cache (Kubernetes quantity) so that reads keep reaching the bucket.
func newRig(t *testing.T, files map[string][]byte, cacheSize string) *rig {
	t.Helper()
	return newRigWith(t, files, cacheSize, func(s *mountspec.Spec) { s.ReadOnly = true })
}

// newWritableRig is newRig with a volume that can be written.
func newWritableRig(t *testing.T, files map[string][]byte, cacheSize string) *rig {
	t.Helper()
	return newRigWith(t, files, cacheSize, func(*mountspec.Spec) {})
}

// newRigWith stages files with the spec edit makes of the default one.
func newRigWith(t *testing.T, files map[string][]byte, cacheSize string, edit func(*mountspec.Spec)) *rig {
	t.Helper()
	r := &rig{bucket: newBucket(t, files)}
	bin, err := testserver.CSIDriver()
	if err != nil {
		t.Fatalf("build csi-driver: %v", err)
	}
	r.dir, err = os.MkdirTemp("", "basin-chaos-")
	if err != nil {
		t.Fatal(err)
	}
	r.staging, r.cache = filepath.Join(r.dir, "staging"), filepath.Join(r.dir, "cache")
	for _, d := range []string{r.staging, r.cache, filepath.Join(r.dir, "creds")} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	r.m, err = supervisor.NewManager(supervisor.Config{
		Binary: bin, CredentialsDir: filepath.Join(r.dir, "creds"),
		CheckInterval: 200 * time.Millisecond, CheckTimeout: 2 * time.Second,
		Reaper: supervisor.ReapProcs, Standby: os.Getenv("BASIN_CHAOS_STANDBY") != "0",
	})
	if err != nil {
		t.Fatal(err)
	}
	spec := mountspec.Default()
	spec.Bucket, spec.Endpoint, spec.Region, spec.PathStyle = r.name, r.srv.Endpoint, r.srv.Region, true
	spec.MetadataTTL = time.Hour
	edit(&spec)
	if spec.CacheSize, err = mountspec.ParseSize(cacheSize); err != nil {
		t.Fatal(err)
	}
	r.req = supervisor.Request{
		VolumeID: "chaos", StagingPath: r.staging, CacheDir: r.cache,
		Spec:        spec,
		Credentials: r.creds,
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if err := r.m.Unstage(ctx, r.req.VolumeID, r.staging); err != nil {
			t.Errorf("unstage: %v", err)
		}
		r.m.Close()
		_ = os.RemoveAll(r.dir)
	})
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	if err := r.m.Stage(ctx, r.req); err != nil {
		t.Fatalf("stage: %v", err)
	}
	return r
}

// pid is the serving FUSE process.
func (r *rig) pid(t *testing.T) int {
	st, err := r.m.Check(t.Context(), r.req.VolumeID)
	if err != nil {
		t.Fatal(err)
	}
	return st.Pid
}

// waitServing waits until a process other than old serves the volume,
// healthy, and returns the last heal.
func (r *rig) waitServing(t *testing.T, old int) supervisor.HealEvent {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		st, err := r.m.Check(t.Context(), r.req.VolumeID)
		if err != nil {
			t.Fatal(err)
		}
		if st.Healthy && st.Pid != 0 && st.Pid != old && st.LastHeal != nil {
			return *st.LastHeal
		}
		time.Sleep(5 * time.Millisecond)
	}
	t.Fatalf("no process replaced %d within 30s", old)
	return supervisor.HealEvent{}
}

// randomFiles makes n files of size bytes under prefix.
func randomFiles(prefix string, n, size int) map[string][]byte {
	m := make(map[string][]byte, n)
	for i := range n {
		b := make([]byte, size)
		_, _ = rand.Read(b)
		m[prefix+hex.EncodeToString([]byte{byte(i >> 8), byte(i)})+".bin"] = b
	}
	return m
}

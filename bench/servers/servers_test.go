package servers

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/basin-csi/basin/internal/testserver"
	"github.com/basin-csi/basin/pkg/objstore"
	"github.com/basin-csi/basin/pkg/objstore/backend"
)

func TestMinIO(t *testing.T) {
	bin := testserver.RequireBinary(t, "minio", testserver.InstallHint)
	ctx := context.Background()
	dir := t.TempDir()
	s, err := StartMinIO(ctx, bin, dir)
	if err != nil {
		t.Fatal(err)
	}
	cfg := objstore.Config{Backend: objstore.BackendS3, Bucket: "servers-test", Endpoint: s.Endpoint, Region: MinIORegion, PathStyle: true}
	creds := objstore.Credentials{AccessKeyID: MinIOAccessKey, SecretAccessKey: MinIOSecretKey}
	admin, err := backend.OpenAdmin(ctx, cfg, creds)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = admin.Close() }()
	if err := admin.CreateBucket(ctx, cfg.Bucket); err != nil {
		t.Fatal(err)
	}
	store, err := backend.Open(ctx, cfg, creds)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = store.Close() }()
	if _, err := store.Put(ctx, "k", strings.NewReader("v"), objstore.PutOptions{Size: 1}); err != nil {
		t.Fatal(err)
	}
	if info, err := store.Stat(ctx, "k"); err != nil || info.Size != 1 {
		t.Fatalf("Stat = %+v, %v", info, err)
	}
	// Purging the deleted objects of a running server loses nothing it serves.
	if _, err := store.Put(ctx, "gone", strings.NewReader(strings.Repeat("x", 1<<20)), objstore.PutOptions{Size: 1 << 20}); err != nil {
		t.Fatal(err)
	}
	if err := store.Delete(ctx, "gone"); err != nil {
		t.Fatal(err)
	}
	if err := PurgeMinIOTrash(dir); err != nil {
		t.Fatalf("PurgeMinIOTrash: %v", err)
	}
	if info, err := store.Stat(ctx, "k"); err != nil || info.Size != 1 {
		t.Fatalf("after the purge: Stat = %+v, %v", info, err)
	}
	s.Stop()
	if _, err := http.Get(s.Endpoint + "/minio/health/live"); err == nil {
		t.Fatal("MinIO still answers after Stop")
	}
}

func TestGCS(t *testing.T) {
	bin := testserver.RequireBinary(t, "fake-gcs-server", testserver.InstallHint)
	port, err := FreePort()
	if err != nil {
		t.Fatal(err)
	}
	s, err := StartGCS(context.Background(), bin, t.TempDir(), port, "")
	if err != nil {
		t.Fatal(err)
	}
	defer s.Stop()
	if want := fmt.Sprintf("http://127.0.0.1:%d", port); s.Endpoint != want {
		t.Errorf("Endpoint = %s, want %s", s.Endpoint, want)
	}
	resp, err := http.Get(s.Endpoint + "/storage/v1/b")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	_ = resp.Body.Close()
	if resp.StatusCode != http.StatusOK || !strings.Contains(string(body), "storage#buckets") {
		t.Fatalf("list buckets: %d %s", resp.StatusCode, body)
	}
}

func TestStartFailure(t *testing.T) {
	_, err := StartMinIO(context.Background(), "/bin/false", t.TempDir())
	if !errors.Is(err, ErrNotReady) {
		t.Fatalf("err = %v, want ErrNotReady", err)
	}
}

// The purge empties MinIO's trash and its previous temporary files, and
// nothing else.
func TestPurgeMinIOTrash(t *testing.T) {
	dir := t.TempDir()
	sys := filepath.Join(dir, "data", ".minio.sys")
	files := map[string]bool{ // path: kept
		"data/bucket/object/xl.meta":        true,
		"data/.minio.sys/format.json":       true,
		"data/.minio.sys/tmp/upload-1":      true,
		"data/.minio.sys/tmp/.trash/a/part": false,
		"data/.minio.sys/tmp-old/b/part":    false,
	}
	for p := range files {
		path := filepath.Join(dir, filepath.FromSlash(p))
		if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte("x"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	if err := PurgeMinIOTrash(dir); err != nil {
		t.Fatal(err)
	}
	for p, kept := range files {
		_, err := os.Stat(filepath.Join(dir, filepath.FromSlash(p)))
		if kept != (err == nil) {
			t.Errorf("%s: kept %v, want %v (err %v)", p, err == nil, kept, err)
		}
	}
	if _, err := os.Stat(filepath.Join(sys, "tmp", ".trash")); err != nil {
		t.Errorf("the trash directory itself went: %v", err)
	}
	if err := PurgeMinIOTrash(t.TempDir()); err != nil {
		t.Errorf("a directory MinIO never used: %v", err)
	}
}

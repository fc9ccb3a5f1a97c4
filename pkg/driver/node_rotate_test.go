package driver

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/basin-csi/basin/internal/testserver"
	"github.com/basin-csi/basin/pkg/driver/volumeattr"
	"github.com/basin-csi/basin/pkg/mountspec"
	"github.com/basin-csi/basin/pkg/objstore"
	"github.com/basin-csi/basin/pkg/objstore/backend"
)

// ownedVolume is a volume on a MinIO owned by the test (so it can be
// stopped and restarted with other keys), with files under vol/.
type ownedVolume struct {
	srv     *testserver.Server
	id      string
	context map[string]string
	files   map[string][]byte // by path inside the volume
}

func newOwnedVolume(t *testing.T, extra ...string) ownedVolume {
	t.Helper()
	srv := testserver.NewMinIO(t)
	cfg := objstore.Config{Backend: objstore.BackendS3, Endpoint: srv.Endpoint, Region: srv.Region, PathStyle: true, Bucket: "basin-owned"}
	creds := objstore.Credentials{AccessKeyID: srv.AccessKey, SecretAccessKey: srv.SecretKey}
	createBucket(t, cfg, creds)
	st, err := backend.Open(t.Context(), cfg, creds)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = st.Close() }()
	v := ownedVolume{srv: srv, id: "s3/" + uniqueName("owned-"), files: map[string][]byte{}}
	for i := range 12 {
		b := bytes.Repeat([]byte{byte('a' + i)}, 1000+i*20000)
		p := fmt.Sprintf("train/f%02d.bin", i)
		v.files[p] = b
		if _, err := st.Put(t.Context(), "vol/"+p, bytes.NewReader(b), objstore.PutOptions{Size: int64(len(b))}); err != nil {
			t.Fatal(err)
		}
	}
	v.context = with(map[string]string{
		mountspec.KeyBackend: "s3", mountspec.KeyBucket: cfg.Bucket, mountspec.KeyPrefix: "vol",
		mountspec.KeyEndpoint: srv.Endpoint, mountspec.KeyRegion: srv.Region, mountspec.KeyPathStyle: "true",
		mountspec.KeyMetadataTTL: "-1",
	}, extra...)
	return v
}

// secrets are the srv's current root keys as a secret map.
func (v ownedVolume) secrets() map[string]string {
	return map[string]string{volumeattr.SecretAccessKeyID: v.srv.AccessKey, volumeattr.SecretSecretAccessKey: v.srv.SecretKey}
}

func (h *nodeHarness) stageWith(t *testing.T, v ownedVolume, staging string) {
	t.Helper()
	_, err := h.client.NodeStageVolume(t.Context(), &csi.NodeStageVolumeRequest{
		VolumeId: v.id, StagingTargetPath: staging, VolumeContext: v.context, Secrets: v.secrets(),
		VolumeCapability: mountCap(csi.VolumeCapability_AccessMode_MULTI_NODE_READER_ONLY),
	})
	if err != nil {
		t.Fatalf("NodeStageVolume: %v", err)
	}
}

func (h *nodeHarness) publishWith(t *testing.T, v ownedVolume, staging, target string, secrets map[string]string) error {
	_, err := h.client.NodePublishVolume(t.Context(), &csi.NodePublishVolumeRequest{
		VolumeId: v.id, StagingTargetPath: staging, TargetPath: target, Readonly: true, VolumeContext: v.context,
		Secrets: secrets, VolumeCapability: mountCap(csi.VolumeCapability_AccessMode_MULTI_NODE_READER_ONLY),
	})
	return err
}

// TestRotateCredentialsOnRepublish: a volume is staged with MinIO's key
// A; MinIO restarts with key B (A stops working); kubelet's periodic
// NodePublishVolume (requiresRepublish) brings B in the node-publish
// secret; files not read before then read fine from the same FUSE process
// (no remount, no heal).
func TestRotateCredentialsOnRepublish(t *testing.T) {
	h := startNode(t, nil)
	v := newOwnedVolume(t)
	staging, target := filepath.Join(h.dir, "staging"), filepath.Join(h.dir, "pod", "mount")
	h.stageWith(t, v, staging)
	if err := h.publishWith(t, v, staging, target, v.secrets()); err != nil {
		t.Fatalf("NodePublishVolume: %v", err)
	}
	readBytes(t, filepath.Join(target, "train/f00.bin"), v.files["train/f00.bin"])
	pid := servingPid(t, h, v.id)

	v.srv.Stop()
	v.srv.SetRootCredentials("basin-rotated", "basin-rotated-secret-5678")
	if err := v.srv.Start(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.ReadFile(filepath.Join(target, "train/f11.bin")); !errors.Is(err, syscall.EACCES) {
		t.Fatalf("read with the retired key = %v, want EACCES", err)
	}

	start := time.Now()
	if err := h.publishWith(t, v, staging, target, v.secrets()); err != nil { // the periodic republish
		t.Fatalf("NodePublishVolume with the new secret: %v", err)
	}
	t.Logf("republish with rotated credentials took %v", time.Since(start).Round(time.Millisecond))
	for i := 1; i < 11; i++ {
		p := fmt.Sprintf("train/f%02d.bin", i)
		readBytes(t, filepath.Join(target, p), v.files[p])
	}
	if got := servingPid(t, h, v.id); got != pid {
		t.Errorf("FUSE process %d replaced by %d: rotation must not restart it", pid, got)
	}
	if s, err := h.node.check(t.Context(), v.id); err != nil || s.Heals != 0 {
		t.Errorf("Check = %+v, %v; want no heal", s, err)
	}
	saved, err := h.node.state.LoadCredentials(v.id)
	if err != nil || saved.AccessKeyID != "basin-rotated" {
		t.Errorf("node state keeps key %q, %v; want the rotated one for later stages", saved.AccessKeyID, err)
	}

	// A secret that does not parse fails the publish, naming no value.
	bad := map[string]string{volumeattr.SecretAccessKeyID: "only-half-of-a-pair-123"}
	err = h.publishWith(t, v, staging, target, bad)
	if status.Code(err) != codes.InvalidArgument {
		t.Errorf("publish with half a key pair = %v, want InvalidArgument", err)
	}
	if err != nil && bytes.Contains([]byte(err.Error()), []byte("only-half-of-a-pair-123")) {
		t.Errorf("error quotes the secret: %v", err)
	}
}

// TestWarmupAttribute: a volume with warmup=train is read in the
// background after NodeStageVolume; once the cache holds it, MinIO stops
// and every file still reads, from the node's cache.
func TestWarmupAttribute(t *testing.T) {
	h := startNode(t, nil)
	v := newOwnedVolume(t, volumeattr.KeyWarmup, "train/")
	var total int64
	for _, b := range v.files {
		total += int64(len(b))
	}
	staging, target := filepath.Join(h.dir, "staging"), filepath.Join(h.dir, "pod", "mount")
	h.stageWith(t, v, staging)
	if err := h.publishWith(t, v, staging, target, nil); err != nil {
		t.Fatalf("NodePublishVolume: %v", err)
	}
	deadline := time.Now().Add(60 * time.Second)
	var used int64
	for time.Now().Before(deadline) {
		var st syscall.Statfs_t
		if err := syscall.Statfs(target, &st); err != nil { // the staging path of a read-only volume is no mount
			t.Fatal(err)
		}
		if used = int64(st.Blocks-st.Bfree) * st.Bsize; used >= total {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	if used < total {
		t.Fatalf("cache holds %d bytes after 60 s, want the %d of train/", used, total)
	}
	v.srv.Stop()
	for p, b := range v.files {
		readBytes(t, filepath.Join(target, p), b)
	}
}

func readBytes(t *testing.T, path string, want []byte) {
	t.Helper()
	got, err := os.ReadFile(path)
	if err != nil || !bytes.Equal(got, want) {
		t.Fatalf("read %s: %d bytes, %v; want %d bytes", path, len(got), err, len(want))
	}
}

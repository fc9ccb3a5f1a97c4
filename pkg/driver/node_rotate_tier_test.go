package driver

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/container-storage-interface/spec/lib/go/csi"

	"github.com/basin-csi/basin/internal/testserver"
	"github.com/basin-csi/basin/pkg/driver/volumeattr"
	"github.com/basin-csi/basin/pkg/mountspec"
	"github.com/basin-csi/basin/pkg/objstore"
	"github.com/basin-csi/basin/pkg/objstore/backend"
)

// TestRotateSharedCacheCredentials: two volumes over one bucket share a
// tier on a MinIO of its own, staged with its key A. A fills the tier
// with half the files; the tier's MinIO restarts with key B (A stops
// working); a repeated NodeStageVolume brings B to one volume (its
// node-stage secret changed), a republish to the other (its node-publish
// secret). Without a remount or a heal: the first volume fills the tier
// with the other half, and the second, with the bucket's server stopped,
// reads every file from the tier.
func TestRotateSharedCacheCredentials(t *testing.T) {
	h := startNode(t, nil)
	tierSrv := testserver.NewMinIO(t)
	tierCfg := objstore.Config{Backend: objstore.BackendS3, Endpoint: tierSrv.Endpoint, Region: tierSrv.Region, PathStyle: true, Bucket: "basin-tier"}
	createBucket(t, tierCfg, objstore.Credentials{AccessKeyID: tierSrv.AccessKey, SecretAccessKey: tierSrv.SecretKey})
	// Prefetch off: only the files read here go to the tier.
	a := newOwnedVolume(t, mountspec.KeySharedCache, tierSrv.Endpoint+"/basin-tier/shared", mountspec.KeyPrefetch, "false")
	b := a
	// Another cache size: two processes and caches, not one share.
	b.id, b.context = "s3/"+uniqueName("owned-"), with(a.context, mountspec.KeyCacheSize, "512Mi")
	secrets := func(v ownedVolume) map[string]string { // the bucket's and the tier's current keys
		return with(v.secrets(), volumeattr.SecretSharedCacheAccessKeyID, tierSrv.AccessKey,
			volumeattr.SecretSharedCacheSecretAccessKey, tierSrv.SecretKey)
	}
	stage := func(v ownedVolume, staging string) {
		t.Helper()
		_, err := h.client.NodeStageVolume(t.Context(), &csi.NodeStageVolumeRequest{
			VolumeId: v.id, StagingTargetPath: staging, VolumeContext: v.context, Secrets: secrets(v),
			VolumeCapability: mountCap(csi.VolumeCapability_AccessMode_MULTI_NODE_READER_ONLY),
		})
		if err != nil {
			t.Fatalf("NodeStageVolume %s: %v", v.id, err)
		}
	}
	stagingA, stagingB := filepath.Join(h.dir, "staging-a"), filepath.Join(h.dir, "staging-b")
	targetA, targetB := filepath.Join(h.dir, "pod-a", "mount"), filepath.Join(h.dir, "pod", "mount")
	stage(a, stagingA)
	stage(b, stagingB)
	// Read-only volumes are read through their targets: their staging
	// paths stay plain directories (node_share.go).
	if err := h.publishWith(t, a, stagingA, targetA, secrets(a)); err != nil {
		t.Fatalf("NodePublishVolume: %v", err)
	}
	if err := h.publishWith(t, b, stagingB, targetB, secrets(b)); err != nil {
		t.Fatalf("NodePublishVolume: %v", err)
	}
	files := func(from, to int) []string {
		var out []string
		for i := from; i < to; i++ {
			out = append(out, fmt.Sprintf("train/f%02d.bin", i))
		}
		return out
	}
	// B learns every file's version now (metadataTTL -1), reads no data.
	for _, p := range files(0, 12) {
		if _, err := os.Stat(filepath.Join(targetB, p)); err != nil {
			t.Fatal(err)
		}
	}
	for _, p := range files(0, 6) {
		readBytes(t, filepath.Join(targetA, p), a.files[p])
	}
	waitTierObjects(t, tierCfg, objstore.Credentials{AccessKeyID: tierSrv.AccessKey, SecretAccessKey: tierSrv.SecretKey}, 6)
	pidA, pidB := servingPid(t, h, a.id), servingPid(t, h, b.id)
	if pidA == pidB {
		t.Fatalf("both volumes served by process %d; the test needs two caches", pidA)
	}

	tierSrv.Stop()
	tierSrv.SetRootCredentials("basin-tier-rotated", "basin-tier-rotated-secret-9012")
	if err := tierSrv.Start(); err != nil {
		t.Fatal(err)
	}
	rotated := objstore.Credentials{AccessKeyID: tierSrv.AccessKey, SecretAccessKey: tierSrv.SecretKey}
	stage(a, stagingA) // the node-stage secret changed
	publishSecret := map[string]string{volumeattr.SecretSharedCacheAccessKeyID: rotated.AccessKeyID,
		volumeattr.SecretSharedCacheSecretAccessKey: rotated.SecretAccessKey}
	if err := h.publishWith(t, b, stagingB, targetB, publishSecret); err != nil { // the periodic republish
		t.Fatalf("NodePublishVolume with the tier's new key: %v", err)
	}
	for _, id := range []string{a.id, b.id} {
		saved, err := h.node.state.LoadCredentials(sharedCacheCredentialsID(id))
		if err != nil || !saved.Equal(rotated) {
			t.Errorf("volume %s: node state keeps tier key %q, %v; want the rotated one for later stages", id, saved.AccessKeyID, err)
		}
	}

	// Fills with the new key: the other half, never read before.
	for _, p := range files(6, 12) {
		readBytes(t, filepath.Join(targetA, p), a.files[p])
	}
	waitTierObjects(t, tierCfg, rotated, 12)

	// Reads with the new key: the bucket is gone, the tier serves all.
	a.srv.Stop()
	for _, p := range files(0, 12) {
		readBytes(t, filepath.Join(targetB, p), b.files[p])
	}
	for id, pid := range map[string]int{a.id: pidA, b.id: pidB} {
		if got := servingPid(t, h, id); got != pid {
			t.Errorf("volume %s: FUSE process %d replaced by %d: rotation must not restart it", id, pid, got)
		}
		if s, err := h.node.mounter.Check(t.Context(), id); err != nil || s.Heals != 0 {
			t.Errorf("volume %s: Check = %+v, %v; want no heal", id, s, err)
		}
	}
}

// waitTierObjects waits (up to a minute: fills run in the background)
// until the tier bucket holds want objects, listed with creds.
func waitTierObjects(t *testing.T, cfg objstore.Config, creds objstore.Credentials, want int) {
	t.Helper()
	st, err := backend.Open(t.Context(), cfg, creds)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = st.Close() }()
	var got int
	var lerr error
	for deadline := time.Now().Add(time.Minute); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		got = 0
		lerr = objstore.ListAll(t.Context(), st, objstore.ListOptions{Prefix: "shared/basin/"}, func(p objstore.ListPage) error {
			got += len(p.Objects)
			return nil
		})
		if lerr == nil && got >= want {
			return
		}
	}
	t.Fatalf("tier holds %d objects (%v), want %d", got, lerr, want)
}

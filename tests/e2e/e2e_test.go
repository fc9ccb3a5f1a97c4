package e2e

import (
	"bytes"
	"crypto/rand"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"syscall"
	"testing"
	"time"

	"github.com/container-storage-interface/spec/lib/go/csi"

	"github.com/basin-csi/basin/internal/testserver"
	"github.com/basin-csi/basin/pkg/driver/volumeattr"
	"github.com/basin-csi/basin/pkg/mountspec"
	"github.com/basin-csi/basin/pkg/objstore"
	"github.com/basin-csi/basin/pkg/objstore/backend"
	"github.com/basin-csi/basin/pkg/objstore/objstoretest"
)

// backendSetup is an object store with an existing parent bucket, as a
// StorageClass and its secret describe it.
type backendSetup struct {
	params  map[string]string
	secrets map[string]string
	creds   objstore.Credentials
}

func minio(t *testing.T) backendSetup {
	srv := testserver.MinIO(t)
	b := backendSetup{
		params: map[string]string{mountspec.KeyBackend: "s3", mountspec.KeyRegion: srv.Region, mountspec.KeyPathStyle: "true"},
		secrets: map[string]string{volumeattr.SecretAccessKeyID: srv.AccessKey, volumeattr.SecretSecretAccessKey: srv.SecretKey,
			volumeattr.SecretEndpoint: srv.Endpoint},
		creds: objstore.Credentials{AccessKeyID: srv.AccessKey, SecretAccessKey: srv.SecretKey},
	}
	b.createParent(t, objstore.Config{Backend: objstore.BackendS3, Endpoint: srv.Endpoint, Region: srv.Region, PathStyle: true})
	return b
}

func gcs(t *testing.T) backendSetup {
	srv := testserver.GCS(t)
	b := backendSetup{
		params:  map[string]string{mountspec.KeyBackend: "gcs"},
		secrets: map[string]string{volumeattr.SecretEndpoint: srv.Endpoint},
	}
	b.createParent(t, objstore.Config{Backend: objstore.BackendGCS, Endpoint: srv.Endpoint})
	return b
}

func (b *backendSetup) createParent(t *testing.T, cfg objstore.Config) {
	t.Helper()
	name := "e2e-" + randomHex(5)
	cfg.Bucket = name
	a, err := backend.OpenAdmin(t.Context(), cfg, b.creds)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = a.Close() }()
	if err := a.CreateBucket(t.Context(), name); err != nil {
		t.Fatal(err)
	}
	b.params[mountspec.KeyBucket] = name
	b.params[volumeattr.KeyProvisioning] = "prefix"
	b.params[mountspec.KeyPrefix] = "pvcs"
	b.params[mountspec.KeyMetadataTTL] = "-1" // immutable data: the warm-cache check below relies on it
	b.params[mountspec.KeyCacheSize] = "256Mi"
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	const hexdigits = "0123456789abcdef"
	out := make([]byte, 2*n)
	for i, c := range b {
		out[2*i], out[2*i+1] = hexdigits[c>>4], hexdigits[c&15]
	}
	return string(out)
}

func rwx() *csi.VolumeCapability {
	return &csi.VolumeCapability{
		AccessType: &csi.VolumeCapability_Mount{Mount: &csi.VolumeCapability_MountVolume{}},
		AccessMode: &csi.VolumeCapability_AccessMode{Mode: csi.VolumeCapability_AccessMode_MULTI_NODE_MULTI_WRITER},
	}
}

// TestLifecycle is the life of a dynamically provisioned RWX volume shared
// by two pods on a node, with the FUSE process killed in the middle.
func TestLifecycle(t *testing.T) {
	for _, tc := range []struct {
		name  string
		setup func(t *testing.T) backendSetup
	}{
		{"minio", minio},
		{"gcs", gcs},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := startPlugin(t)
			b := tc.setup(t)
			ctx := t.Context()

			// csi-provisioner: CreateVolume.
			cv, err := p.controller.CreateVolume(ctx, &csi.CreateVolumeRequest{
				Name: "pvc-" + randomHex(8), Parameters: b.params, Secrets: b.secrets,
				VolumeCapabilities: []*csi.VolumeCapability{rwx()},
				CapacityRange:      &csi.CapacityRange{RequiredBytes: 1 << 30},
			})
			if err != nil {
				t.Fatalf("CreateVolume: %v", err)
			}
			vol := cv.GetVolume()
			data := openVolume(t, b, vol)

			// kubelet: NodeStageVolume once, NodePublishVolume per pod.
			staging := filepath.Join(p.dir, "kubelet", "plugins", "basin.csi.dev", randomHex(4), "globalmount")
			pod1 := filepath.Join(p.dir, "kubelet", "pods", "pod1", "volumes", "mount")
			pod2 := filepath.Join(p.dir, "kubelet", "pods", "pod2", "volumes", "mount")
			stage := func() {
				t.Helper()
				if _, err := p.node.NodeStageVolume(ctx, &csi.NodeStageVolumeRequest{
					VolumeId: vol.GetVolumeId(), StagingTargetPath: staging, VolumeCapability: rwx(),
					VolumeContext: vol.GetVolumeContext(), Secrets: b.secrets,
				}); err != nil {
					t.Fatalf("NodeStageVolume: %v", err)
				}
			}
			publish := func(target string, ro bool) {
				t.Helper()
				if _, err := p.node.NodePublishVolume(ctx, &csi.NodePublishVolumeRequest{
					VolumeId: vol.GetVolumeId(), StagingTargetPath: staging, TargetPath: target, Readonly: ro,
					VolumeCapability: rwx(), VolumeContext: vol.GetVolumeContext(),
				}); err != nil {
					t.Fatalf("NodePublishVolume %s: %v", target, err)
				}
			}
			unpublish := func(target string) {
				t.Helper()
				if _, err := p.node.NodeUnpublishVolume(ctx, &csi.NodeUnpublishVolumeRequest{VolumeId: vol.GetVolumeId(), TargetPath: target}); err != nil {
					t.Fatalf("NodeUnpublishVolume %s: %v", target, err)
				}
			}
			unstage := func() {
				t.Helper()
				if _, err := p.node.NodeUnstageVolume(ctx, &csi.NodeUnstageVolumeRequest{VolumeId: vol.GetVolumeId(), StagingTargetPath: staging}); err != nil {
					t.Fatalf("NodeUnstageVolume: %v", err)
				}
			}
			stage()
			publish(pod1, false)
			publish(pod2, true)

			// Pod 1 writes a checkpoint; pod 2 reads it; it is in the bucket.
			ckpt := make([]byte, 3<<20+123)
			_, _ = rand.Read(ckpt)
			if err := os.MkdirAll(filepath.Join(pod1, "run1"), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(pod1, "run1", "ckpt.bin"), ckpt, 0o644); err != nil {
				t.Fatal(err)
			}
			mustRead(t, filepath.Join(pod2, "run1", "ckpt.bin"), ckpt)
			if err := os.WriteFile(filepath.Join(pod2, "x"), []byte("x"), 0o644); !errors.Is(err, syscall.EROFS) {
				t.Errorf("write through the read-only pod: %v, want EROFS", err)
			}
			if info, err := data.Stat(ctx, "run1/ckpt.bin"); err != nil || info.Size != int64(len(ckpt)) {
				t.Fatalf("the checkpoint in the bucket: %+v, %v", info, err)
			}
			// The written file becomes the cached copy when the kernel
			// releases it, just after close returns: poll briefly.
			var usage []*csi.VolumeUsage
			for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(50 * time.Millisecond) {
				stats, err := p.node.NodeGetVolumeStats(ctx, &csi.NodeGetVolumeStatsRequest{VolumeId: vol.GetVolumeId(), VolumePath: pod1})
				if err != nil {
					t.Fatal(err)
				}
				usage = stats.GetUsage()
				if len(usage) == 2 && usage[0].GetUsed() >= int64(len(ckpt)) || time.Now().After(deadline) {
					break
				}
			}
			if len(usage) != 2 || usage[0].GetTotal() != 256<<20 || usage[0].GetUsed() < int64(len(ckpt)) {
				t.Errorf("stats = %v; want 256Mi total and the checkpoint counted", usage)
			}

			// The FUSE process dies; the watchdog heals; both pods read again.
			pids := p.fusePids(t)
			if len(pids) != 1 {
				t.Fatalf("%d FUSE processes, want 1 for the volume: %v", len(pids), pids)
			}
			killed := time.Now()
			if err := syscall.Kill(pids[0], syscall.SIGKILL); err != nil {
				t.Fatal(err)
			}
			waitHealed(t, p, vol.GetVolumeId())
			t.Logf("%s: served again %v after SIGKILL", tc.name, time.Since(killed).Round(time.Millisecond))
			if now := p.fusePids(t); len(now) != 1 || now[0] == pids[0] {
				t.Errorf("FUSE processes after the heal: %v (killed %d)", now, pids[0])
			}
			mustRead(t, filepath.Join(pod1, "run1", "ckpt.bin"), ckpt)
			mustRead(t, filepath.Join(pod2, "run1", "ckpt.bin"), ckpt)

			unpublish(pod1)
			unpublish(pod2)
			unstage()
			if n := len(p.fusePids(t)); n != 0 {
				t.Errorf("%d FUSE processes after unstage", n)
			}

			// The next stage finds the cache warm: the checkpoint is gone
			// from the bucket, yet reads back from the node's cache.
			if err := data.Delete(ctx, "run1/ckpt.bin"); err != nil {
				t.Fatal(err)
			}
			stage()
			publish(pod1, false)
			mustRead(t, filepath.Join(pod1, "run1", "ckpt.bin"), ckpt)
			unpublish(pod1)
			unstage()

			// csi-provisioner: DeleteVolume (reclaim: delete).
			if _, err := p.controller.DeleteVolume(ctx, &csi.DeleteVolumeRequest{VolumeId: vol.GetVolumeId(), Secrets: b.secrets}); err != nil {
				t.Fatalf("DeleteVolume: %v", err)
			}
			if keys, _ := objstoretest.Keys(t, data, objstore.ListOptions{}); len(keys) != 0 {
				t.Errorf("the volume's prefix still holds %q", keys)
			}
		})
	}
}

func mustRead(t *testing.T, path string, want []byte) {
	t.Helper()
	got, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("read %s: %v", path, err)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("read %s: %d bytes differ from the %d written", path, len(got), len(want))
	}
}

// waitHealed polls NodeGetVolumeHealth, as a health monitor would, until
// the volume reports a finished heal.
func waitHealed(t *testing.T, p *plugin, id string) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	var last []*csi.VolumeHealth_VolumeHealthEntry
	for time.Now().Before(deadline) {
		h, err := p.node.NodeGetVolumeHealth(t.Context(), &csi.NodeGetVolumeHealthRequest{VolumeId: id})
		if err != nil {
			t.Fatal(err)
		}
		last = h.GetVolumeHealth().GetHealthStatuses()
		if slices.ContainsFunc(last, func(e *csi.VolumeHealth_VolumeHealthEntry) bool { return e.GetReason() == "RecentlyHealed" }) {
			t.Logf("health: %s", last[0].GetMessage())
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatalf("no heal reported; last health %v", last)
}

// openVolume opens a volume's data (bucket + prefix) from its context.
func openVolume(t *testing.T, b backendSetup, vol *csi.Volume) objstore.Store {
	t.Helper()
	a, err := volumeattr.Parse(vol.GetVolumeContext(), b.secrets)
	if err != nil {
		t.Fatal(err)
	}
	s, err := backend.Open(t.Context(), a.StoreConfig(), b.creds)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return objstore.WithPrefix(s, a.Prefix)
}

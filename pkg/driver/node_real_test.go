package driver

import (
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc/codes"

	"github.com/basin-csi/basin/pkg/driver/volumeattr"
	"github.com/basin-csi/basin/pkg/mountspec"
	"github.com/basin-csi/basin/pkg/objstore"
)

// realVolume is a volume in a real store with one file in it.
type realVolume struct {
	id      string
	context map[string]string
	secrets map[string]string
	store   objstore.Store // the volume's data, for assertions
}

func fileVolume(t *testing.T, h *nodeHarness) realVolume {
	dir := filepath.Join(h.dir, "bucket")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	s := store{name: "file", params: map[string]string{mountspec.KeyBackend: "file"}, parent: dir,
		cfg: objstore.Config{Backend: objstore.BackendFile, Bucket: dir}}
	return newRealVolume(t, s, "file/"+uniqueName("vol-"))
}

func minioVolume(t *testing.T) realVolume {
	s := minioStore(t)
	return newRealVolume(t, s, "s3/"+uniqueName("vol-"))
}

func newRealVolume(t *testing.T, s store, id string) realVolume {
	t.Helper()
	ctx := with(s.params, mountspec.KeyBucket, s.parent, mountspec.KeyPrefix, "data/",
		mountspec.KeyMetadataTTL, "-1", mountspec.KeyCacheSize, "64Mi")
	if ep := s.secrets[volumeattr.SecretEndpoint]; ep != "" {
		ctx[mountspec.KeyEndpoint] = ep
	}
	st := openParent(t, s)
	v := realVolume{id: id, context: ctx, secrets: with(s.secrets, volumeattr.SecretEndpoint, ""), store: objstore.WithPrefix(st, "data/")}
	put(t, v.store, "hello.txt", "hello from the bucket")
	return v
}

func (h *nodeHarness) stage(t *testing.T, v realVolume, staging string) {
	t.Helper()
	_, err := h.client.NodeStageVolume(t.Context(), &csi.NodeStageVolumeRequest{
		VolumeId: v.id, StagingTargetPath: staging, VolumeContext: v.context, Secrets: v.secrets,
		VolumeCapability: mountCap(csi.VolumeCapability_AccessMode_MULTI_NODE_MULTI_WRITER),
	})
	if err != nil {
		t.Fatalf("NodeStageVolume: %v", err)
	}
}

func (h *nodeHarness) publish(t *testing.T, v realVolume, staging, target string, ro bool) {
	t.Helper()
	_, err := h.client.NodePublishVolume(t.Context(), &csi.NodePublishVolumeRequest{
		VolumeId: v.id, StagingTargetPath: staging, TargetPath: target, Readonly: ro, VolumeContext: v.context,
		VolumeCapability: mountCap(csi.VolumeCapability_AccessMode_MULTI_NODE_MULTI_WRITER),
	})
	if err != nil {
		t.Fatalf("NodePublishVolume %s: %v", target, err)
	}
}

func readFile(t *testing.T, path, want string) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil || string(b) != want {
		t.Fatalf("read %s = %q, %v; want %q", path, b, err, want)
	}
}

// servingPid is the pid of the FUSE process serving a volume (its own, or
// its share's).
func servingPid(t *testing.T, h *nodeHarness, id string) int {
	t.Helper()
	s, err := h.node.check(t.Context(), id)
	if err != nil || s.Pid == 0 {
		t.Fatalf("Check = %+v, %v", s, err)
	}
	return s.Pid
}

// waitHealed polls (test only) until the volume healed heals times.
func waitHealed(t *testing.T, h *nodeHarness, id string, heals int64) time.Duration {
	t.Helper()
	start := time.Now()
	for time.Since(start) < 30*time.Second {
		s, err := h.node.check(t.Context(), id)
		if err == nil && s.Heals >= heals && s.Healthy {
			return s.LastHeal.Pause
		}
		time.Sleep(20 * time.Millisecond)
	}
	s, err := h.node.check(t.Context(), id)
	t.Fatalf("volume not healed: %+v, %v", s, err)
	return 0
}

func TestNodeRealMounts(t *testing.T) {
	for _, tc := range []struct {
		name string
		vol  func(t *testing.T, h *nodeHarness) realVolume
	}{
		{"file", fileVolume},
		{"minio", func(t *testing.T, _ *nodeHarness) realVolume { return minioVolume(t) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := startNode(t, nil)
			v := tc.vol(t, h)
			staging := filepath.Join(h.dir, "staging")
			t1, t2 := filepath.Join(h.dir, "pod1", "mount"), filepath.Join(h.dir, "pod2", "mount")

			h.stage(t, v, staging)
			h.stage(t, v, staging) // idempotent
			h.publish(t, v, staging, t1, false)
			h.publish(t, v, staging, t2, true)
			h.publish(t, v, staging, t2, true) // idempotent
			readFile(t, filepath.Join(t1, "hello.txt"), "hello from the bucket")
			readFile(t, filepath.Join(t2, "hello.txt"), "hello from the bucket")
			if err := os.WriteFile(filepath.Join(t1, "new.txt"), []byte("written by pod1"), 0o644); err != nil {
				t.Fatal(err)
			}
			readFile(t, filepath.Join(t2, "new.txt"), "written by pod1")
			if err := os.WriteFile(filepath.Join(t2, "nope.txt"), []byte("x"), 0o644); !errors.Is(err, syscall.EROFS) {
				t.Errorf("write through the read-only target: %v, want EROFS", err)
			}

			// No secret in the FUSE process's argv.
			pid := servingPid(t, h, v.id)
			cmdline, _ := os.ReadFile(filepath.Join("/proc", itoa(pid), "cmdline"))
			for _, s := range v.secrets {
				if len(s) >= 6 && strings.Contains(string(cmdline), s) {
					t.Error("a secret is in the FUSE process's command line")
				}
			}

			stats, err := h.client.NodeGetVolumeStats(t.Context(), &csi.NodeGetVolumeStatsRequest{VolumeId: v.id, VolumePath: t1})
			if err != nil {
				t.Fatal(err)
			}
			if u := stats.GetUsage(); len(u) != 2 || u[0].GetTotal() != 64<<20 || u[0].GetUsed() <= 0 || u[1].GetTotal() == 0 {
				t.Errorf("stats = %v; want 64Mi total and some bytes used", u)
			}

			// Kill the FUSE process: the watchdog remounts and re-binds.
			if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
				t.Fatal(err)
			}
			pause := waitHealed(t, h, v.id, 1)
			t.Logf("healed after SIGKILL in %v", pause)
			if servingPid(t, h, v.id) == pid {
				t.Error("the same pid serves after the heal")
			}
			readFile(t, filepath.Join(t1, "hello.txt"), "hello from the bucket")
			readFile(t, filepath.Join(t2, "new.txt"), "written by pod1")
			if err := os.WriteFile(filepath.Join(t2, "nope.txt"), []byte("x"), 0o644); !errors.Is(err, syscall.EROFS) {
				t.Errorf("after the heal, the read-only target is writable: %v", err)
			}
			health, err := h.client.NodeGetVolumeHealth(t.Context(), &csi.NodeGetVolumeHealthRequest{VolumeId: v.id})
			if err != nil {
				t.Fatal(err)
			}
			if e := health.GetVolumeHealth().GetHealthStatuses(); len(e) != 1 || e[0].GetReason() != reasonHealed {
				t.Errorf("health after a heal = %v, want %s", e, reasonHealed)
			}

			for _, target := range []string{t1, t2, t2} { // twice: idempotent
				if _, err := h.client.NodeUnpublishVolume(t.Context(), &csi.NodeUnpublishVolumeRequest{VolumeId: v.id, TargetPath: target}); err != nil {
					t.Fatalf("NodeUnpublishVolume %s: %v", target, err)
				}
				if _, err := os.Stat(target); !errors.Is(err, os.ErrNotExist) {
					t.Errorf("target %s left behind: %v", target, err)
				}
			}
			unstage := func() {
				t.Helper()
				if _, err := h.client.NodeUnstageVolume(t.Context(), &csi.NodeUnstageVolumeRequest{VolumeId: v.id, StagingTargetPath: staging}); err != nil {
					t.Fatalf("NodeUnstageVolume: %v", err)
				}
			}
			unstage()
			unstage()
			if isMount(t, staging) {
				t.Error("staging still mounted after unstage")
			}
			if _, err := os.Stat(cacheDirFor(h.cfg.CacheRoot, v.id)); err != nil {
				t.Errorf("the cache directory did not survive unstage: %v", err)
			}
			_, err = h.client.NodeGetVolumeStats(t.Context(), &csi.NodeGetVolumeStatsRequest{VolumeId: v.id, VolumePath: t1})
			wantCode(t, "stats after unstage", err, codes.NotFound)

			// The cache is warm for the next stage: the object is gone from
			// the bucket, yet it reads (metadataTTL -1 trusts the cache).
			if err := v.store.Delete(t.Context(), "hello.txt"); err != nil {
				t.Fatal(err)
			}
			h.stage(t, v, staging)
			h.publish(t, v, staging, t1, false)
			readFile(t, filepath.Join(t1, "hello.txt"), "hello from the bucket")
			if _, err := h.client.NodeUnpublishVolume(t.Context(), &csi.NodeUnpublishVolumeRequest{VolumeId: v.id, TargetPath: t1}); err != nil {
				t.Fatal(err)
			}
			unstage()
		})
	}
}

func TestNodeRestartTakesVolumesBack(t *testing.T) {
	h := startNode(t, nil)
	v := fileVolume(t, h)
	staging := filepath.Join(h.dir, "staging")
	target := filepath.Join(h.dir, "pod", "mount")
	h.stage(t, v, staging)
	h.publish(t, v, staging, target, false)
	old := servingPid(t, h, v.id)

	// The node plugin stops; its FUSE process keeps serving.
	h.node.Close()
	readFile(t, filepath.Join(target, "hello.txt"), "hello from the bucket")

	h.serve(t) // a new node plugin takes the volume back, serving meanwhile
	h.waitReady(t)
	pid := servingPid(t, h, v.id)
	if pid == old {
		t.Error("the old FUSE process still serves: it was not replaced")
	}
	if _, err := os.Stat(filepath.Join("/proc", itoa(old))); err == nil {
		if z, _ := os.ReadFile(filepath.Join("/proc", itoa(old), "stat")); !strings.Contains(string(z), ") Z") {
			t.Errorf("the old FUSE process %d still runs", old)
		}
	}
	readFile(t, filepath.Join(target, "hello.txt"), "hello from the bucket")
	if _, err := h.client.NodeUnpublishVolume(t.Context(), &csi.NodeUnpublishVolumeRequest{VolumeId: v.id, TargetPath: target}); err != nil {
		t.Fatal(err)
	}
	if _, err := h.client.NodeUnstageVolume(t.Context(), &csi.NodeUnstageVolumeRequest{VolumeId: v.id, StagingTargetPath: staging}); err != nil {
		t.Fatal(err)
	}
}

func isMount(t *testing.T, path string) bool {
	t.Helper()
	var st, parent syscall.Stat_t
	if err := syscall.Stat(path, &st); err != nil {
		return !errors.Is(err, syscall.ENOENT)
	}
	if err := syscall.Stat(filepath.Dir(path), &parent); err != nil {
		t.Fatal(err)
	}
	return st.Dev != parent.Dev
}

func itoa(n int) string { return strconv.Itoa(n) }

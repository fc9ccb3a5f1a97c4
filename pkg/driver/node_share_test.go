package driver

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc/codes"

	"github.com/basin-csi/basin/internal/fusectl"
	"github.com/basin-csi/basin/pkg/driver/volumeattr"
	"github.com/basin-csi/basin/pkg/mountspec"
	"github.com/basin-csi/basin/pkg/supervisor"
)

// stageMode stages v at staging with access mode m.
func (h *nodeHarness) stageMode(t *testing.T, v realVolume, staging string, m csi.VolumeCapability_AccessMode_Mode) error {
	t.Helper()
	_, err := h.client.NodeStageVolume(t.Context(), &csi.NodeStageVolumeRequest{
		VolumeId: v.id, StagingTargetPath: staging, VolumeContext: v.context, Secrets: v.secrets,
		VolumeCapability: mountCap(m),
	})
	return err
}

// stageReadOnly stages vols read-only, each on a staging path of its own
// laid out as kubelet does, and returns those paths by volume ID.
func (h *nodeHarness) stageReadOnly(t *testing.T, vols ...realVolume) map[string]string {
	t.Helper()
	stagings := map[string]string{}
	for _, v := range vols {
		stagings[v.id] = filepath.Join(h.dir, "csi", strings.ReplaceAll(v.id, "/", "_"), "globalmount")
		if err := h.stageMode(t, v, stagings[v.id], csi.VolumeCapability_AccessMode_MULTI_NODE_READER_ONLY); err != nil {
			t.Fatalf("stage %s: %v", v.id, err)
		}
	}
	return stagings
}

// publishReadOnly publishes v, staged at staging, read-only on target.
func (h *nodeHarness) publishReadOnly(t *testing.T, v realVolume, staging, target string) {
	t.Helper()
	if _, err := h.client.NodePublishVolume(t.Context(), &csi.NodePublishVolumeRequest{
		VolumeId: v.id, StagingTargetPath: staging, TargetPath: target, Readonly: true, VolumeContext: v.context,
		VolumeCapability: mountCap(csi.VolumeCapability_AccessMode_MULTI_NODE_READER_ONLY),
	}); err != nil {
		t.Fatalf("NodePublishVolume %s: %v", target, err)
	}
}

// unpublish unpublishes v's target.
func (h *nodeHarness) unpublish(t *testing.T, v realVolume, target string) {
	t.Helper()
	if _, err := h.client.NodeUnpublishVolume(t.Context(), &csi.NodeUnpublishVolumeRequest{VolumeId: v.id, TargetPath: target}); err != nil {
		t.Fatalf("NodeUnpublishVolume %s: %v", target, err)
	}
}

func (h *nodeHarness) unstage(t *testing.T, v realVolume, staging string) {
	t.Helper()
	if _, err := h.client.NodeUnstageVolume(t.Context(), &csi.NodeUnstageVolumeRequest{VolumeId: v.id, StagingTargetPath: staging}); err != nil {
		t.Fatalf("NodeUnstageVolume %s: %v", v.id, err)
	}
}

// TestReadOnlyVolumesShareOneProcess stages read-only volumes of one MinIO
// source (two with the same prefix, one nested, one whose secret cannot
// read the bucket) and a writable one: the readable read-only volumes
// share one FUSE process and one cache, the unreadable one is refused,
// the writable one has its own process, and the share outlives its first
// volume.
func TestReadOnlyVolumesShareOneProcess(t *testing.T) {
	h := startNode(t, nil)
	a := minioVolume(t)
	put(t, a.store, "sub/nested.txt", "nested data")
	b, nested, denied, writer := a, a, a, a
	b.id = "s3/" + uniqueName("team-b-")
	nested.id = "s3/" + uniqueName("nested-")
	nested.context = with(a.context, mountspec.KeyPrefix, "data/sub/")
	denied.id = "s3/" + uniqueName("denied-")
	denied.secrets = with(a.secrets, volumeattr.SecretSecretAccessKey, "not-the-secret-key")
	writer.id = "s3/" + uniqueName("writer-")
	staging := func(v realVolume) string {
		return filepath.Join(h.dir, "csi", strings.ReplaceAll(v.id, "/", "_"), "globalmount")
	}
	target := func(v realVolume) string {
		return filepath.Join(h.dir, "pods", strings.ReplaceAll(v.id, "/", "_"), "mount")
	}
	const rox = csi.VolumeCapability_AccessMode_MULTI_NODE_READER_ONLY
	for _, v := range []realVolume{a, b, nested} {
		if err := h.stageMode(t, v, staging(v), rox); err != nil {
			t.Fatalf("stage %s: %v", v.id, err)
		}
	}
	if err := h.stageMode(t, a, staging(a), rox); err != nil {
		t.Fatalf("a repeated stage: %v", err)
	}
	for _, v := range []realVolume{a, b, nested} {
		h.publishReadOnly(t, v, staging(v), target(v))
		// Kubelet unstages only a staging path no other mount shows
		// the same root of: a shared volume's stays a plain directory.
		if isMount(t, staging(v)) {
			t.Errorf("%s's staging path is a mount: kubelet would never unstage it", v.id)
		}
	}

	pid := servingPid(t, h, a.id)
	for _, v := range []realVolume{b, nested} {
		if p := servingPid(t, h, v.id); p != pid {
			t.Errorf("%s is served by pid %d, %s by %d: want one process", v.id, p, a.id, pid)
		}
	}
	share := h.node.shares.of(a.id)
	if share == nil {
		t.Fatal("no share recorded for the first volume")
	}
	if got := h.node.ShareMembers(share.id); len(got) != 3 {
		t.Errorf("share members = %v, want the three read-only volumes", got)
	}
	if share.id != a.id {
		t.Errorf("the share is named %q, want the volume that started it, %q", share.id, a.id)
	}
	for _, v := range []realVolume{b, nested} {
		if _, err := os.Stat(cacheDirFor(h.cfg.CacheRoot, v.id)); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("volume %s has a cache directory of its own (%v): the share's is the only one", v.id, err)
		}
	}
	if rec, _ := h.node.state.Get(nested.id); rec.Share != a.id || rec.ShareRoot != "data/" {
		t.Errorf("the nested volume's record names share %q of prefix %q, want %q of %q", rec.Share, rec.ShareRoot, a.id, "data/")
	}
	if vols := h.node.StagedVolumes(t.Context()); len(vols) != 1 || vols[0].ID != share.id || len(vols[0].Members) != 3 {
		t.Errorf("StagedVolumes = %+v, want the share once with its three members", vols)
	}

	readFile(t, filepath.Join(target(a), "hello.txt"), "hello from the bucket")
	readFile(t, filepath.Join(target(nested), "nested.txt"), "nested data")
	// What the first volume read is the second's too: gone from the bucket,
	// it still reads through the second volume (metadataTTL -1 trusts the
	// cache), from the one cache.
	if err := a.store.Delete(t.Context(), "hello.txt"); err != nil {
		t.Fatal(err)
	}
	readFile(t, filepath.Join(target(b), "hello.txt"), "hello from the bucket")
	if _, err := os.Stat(filepath.Join(target(nested), "hello.txt")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the nested volume sees a file above its prefix: %v", err)
	}
	if err := os.WriteFile(filepath.Join(target(b), "new.txt"), []byte("x"), 0o644); !errors.Is(err, syscall.EROFS) {
		t.Errorf("write through a shared read-only volume: %v, want EROFS", err)
	}

	// A volume whose own credentials cannot read the source is refused
	// before it is bound to what the others cached, and told why.
	err := h.stageMode(t, denied, staging(denied), rox)
	wantCode(t, "stage with a secret that cannot read the bucket", err, codes.PermissionDenied)
	if err != nil && (!strings.Contains(err.Error(), "cannot list") || strings.Contains(err.Error(), "not-the-secret-key")) {
		t.Errorf("refusal = %v; want it to say the credentials cannot list the source, without the secret", err)
	}
	if isMount(t, staging(denied)) {
		t.Error("the refused volume's staging path is mounted")
	}

	// A writable volume of the same source writes with its own process.
	if err := h.stageMode(t, writer, staging(writer), csi.VolumeCapability_AccessMode_MULTI_NODE_MULTI_WRITER); err != nil {
		t.Fatal(err)
	}
	if p := servingPid(t, h, writer.id); p == pid {
		t.Error("the writable volume is served by the read-only volumes' process")
	}
	h.unstage(t, writer, staging(writer))

	// The first volume leaves: the others keep reading from the share.
	h.unpublish(t, a, target(a))
	h.unstage(t, a, staging(a))
	readFile(t, filepath.Join(target(b), "hello.txt"), "hello from the bucket")
	readFile(t, filepath.Join(target(nested), "nested.txt"), "nested data")
	if p := servingPid(t, h, b.id); p != pid {
		t.Errorf("the share's process changed when its first volume left: %d, was %d", p, pid)
	}

	// The last volume stops the process and removes the share's mount point.
	for _, v := range []realVolume{b, nested} {
		h.unpublish(t, v, target(v))
		h.unstage(t, v, staging(v))
	}
	if _, err := os.Stat(share.mount); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the share's mount point is left: %v", err)
	}
	if err := syscall.Kill(pid, 0); err == nil {
		if z, _ := os.ReadFile(filepath.Join("/proc", itoa(pid), "stat")); !strings.Contains(string(z), ") Z") {
			t.Errorf("the share's FUSE process %d still runs after its last volume left", pid)
		}
	}
	if _, err := os.Stat(cacheDirFor(h.cfg.CacheRoot, share.id)); err != nil {
		t.Errorf("the share's cache did not outlive it: %v", err)
	}
}

// TestSharedVolumeHeals kills a share's FUSE process: every member reads
// again, through its staging path and its published target.
func TestSharedVolumeHeals(t *testing.T) {
	h := startNode(t, nil)
	a := fileVolume(t, h)
	b := a
	b.id = "file/" + uniqueName("team-b-")
	stagings := h.stageReadOnly(t, a, b)
	target, targetA := filepath.Join(h.dir, "pod", "mount"), filepath.Join(h.dir, "pod-a", "mount")
	h.publishReadOnly(t, b, stagings[b.id], target)
	h.publishReadOnly(t, a, stagings[a.id], targetA)
	readFile(t, filepath.Join(target, "hello.txt"), "hello from the bucket")
	pid := servingPid(t, h, a.id)
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	share := h.node.shares.of(b.id)
	waitHealed(t, h, share.id, 1)
	for _, p := range []string{targetA, target} {
		readFile(t, filepath.Join(p, "hello.txt"), "hello from the bucket")
	}

	// An aborted connection cannot be taken over: the share is mounted
	// again, and the members' staging paths and targets bound again.
	dev, err := h.node.kernel.MountDev(t.Context(), share.mount)
	if err != nil {
		t.Fatal(err)
	}
	if err := fusectl.Abort(dev); err != nil {
		t.Fatal(err)
	}
	waitHealed(t, h, share.id, 2)
	if s, _ := h.node.check(t.Context(), a.id); s.LastHeal == nil || s.LastHeal.Method != "remount" {
		t.Fatalf("heal after an abort = %+v, want a remount", s.LastHeal)
	}
	for _, p := range []string{targetA, target} {
		readFile(t, filepath.Join(p, "hello.txt"), "hello from the bucket")
	}
	h.unpublish(t, b, target)
	h.unpublish(t, a, targetA)
	h.unstage(t, a, stagings[a.id])
	h.unstage(t, b, stagings[b.id])
}

// TestSharedVolumesTakenBack: a restarted node plugin takes shares back
// from the node state: one new process serves the volumes of a share,
// through their staging paths and published targets, also a share whose
// first volume (whose name it bears) left before the restart; no FUSE
// process of the old plugin is left, and unstaging the volumes ends it.
func TestSharedVolumesTakenBack(t *testing.T) {
	h := startNode(t, nil)
	a := fileVolume(t, h)
	b, c := a, a
	b.id = "file/" + uniqueName("team-b-")
	c.id = "file/" + uniqueName("team-c-")
	stagings := h.stageReadOnly(t, a, b, c)
	target, targetC := filepath.Join(h.dir, "pod", "mount"), filepath.Join(h.dir, "pod-c", "mount")
	h.publishReadOnly(t, b, stagings[b.id], target)
	h.publishReadOnly(t, c, stagings[c.id], targetC)
	h.unstage(t, a, stagings[a.id]) // the share keeps its first volume's name
	old := servingPid(t, h, b.id)

	h.node.Close()
	readFile(t, filepath.Join(target, "hello.txt"), "hello from the bucket")
	h.serve(t)
	h.waitReady(t)
	pid := servingPid(t, h, b.id)
	if p := servingPid(t, h, c.id); p != pid {
		t.Errorf("after the restart %s is served by %d, %s by %d: want one process", b.id, pid, c.id, p)
	}
	if s := h.node.shares.of(b.id); s == nil || s.id != a.id {
		t.Errorf("after the restart %s is served by share %+v, want the share named %s again", b.id, s, a.id)
	}
	if pids, err := supervisor.ProcsUnder(h.cfg.CacheRoot); err != nil || len(pids) != 1 {
		t.Errorf("FUSE processes after the restart: %v (%v), want one", pids, err)
	}
	t.Logf("FUSE process %d before the restart, %d after", old, pid)
	for _, p := range []string{target, targetC} {
		readFile(t, filepath.Join(p, "hello.txt"), "hello from the bucket")
	}
	h.unpublish(t, b, target)
	h.unpublish(t, c, targetC)
	h.unstage(t, b, stagings[b.id])
	h.unstage(t, c, stagings[c.id])
	if err := syscall.Kill(pid, 0); err == nil {
		if z, _ := os.ReadFile(filepath.Join("/proc", itoa(pid), "stat")); !strings.Contains(string(z), ") Z") {
			t.Errorf("the share's FUSE process %d still runs after its volumes left", pid)
		}
	}
}

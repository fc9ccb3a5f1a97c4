package driver

import (
	"context"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/basin-csi/basin/pkg/admin"
)

// TestStagedVolumesReal stages a volume with a real FUSE process and
// checks what the node's metrics rely on: StagedVolumes names the cache
// directory where that process serves its admin socket, and heals are
// counted, with a new process answering on the socket after a heal.
func TestStagedVolumesReal(t *testing.T) {
	h := startNode(t, nil)
	v := fileVolume(t, h)
	staging := filepath.Join(h.dir, "staging")
	h.stage(t, v, staging)
	readFile(t, filepath.Join(staging, "hello.txt"), "hello from the bucket")

	adminOf := func() (*admin.Client, StagedVolume) {
		t.Helper()
		vols := h.node.StagedVolumes(t.Context())
		if len(vols) != 1 || vols[0].ID != v.id || !vols[0].Served {
			t.Fatalf("staged volumes = %+v", vols)
		}
		return admin.NewClient(admin.SocketPath(vols[0].CacheDir)), vols[0]
	}
	cl, sv := adminOf()
	info, err := cl.Info(t.Context())
	if err != nil {
		t.Fatalf("admin socket of the staged volume: %v", err)
	}
	pid := servingPid(t, h, v.id)
	if info.VolumeID != v.id || info.PID != pid || sv.Heals != 0 || !sv.Healthy {
		t.Errorf("info = %+v (serving pid %d), staged = %+v", info, pid, sv)
	}
	st, err := cl.Stats(t.Context())
	if err != nil || !st.Live || st.MissBytes == 0 || st.CapacityBytes != 64<<20 {
		t.Errorf("stats = %+v, %v; want a live cache that fetched hello.txt", st, err)
	}

	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	waitHealed(t, h, v.id, 1)
	cl, sv = adminOf()
	if sv.Heals != 1 || h.node.Heals() != 1 {
		t.Errorf("heals: volume %d, node %d; want 1", sv.Heals, h.node.Heals())
	}
	// The new process binds its socket right after it mounted, a moment
	// after the supervisor saw the mount answer.
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		if info, err = cl.Info(context.Background()); err == nil || time.Now().After(deadline) {
			break
		}
	}
	if err != nil || info.PID != servingPid(t, h, v.id) || info.PID == pid {
		t.Errorf("admin socket after the heal: %+v, %v; want the new process", info, err)
	}
}

package driver

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/container-storage-interface/spec/lib/go/csi"

	"github.com/basin-csi/basin/pkg/driver/volumeattr"
	"github.com/basin-csi/basin/pkg/warmup"
)

// stageWarming stages volume id on a fake mount whose staging directory
// holds a 1 TiB sparse file, with the warmup attribute set: the real
// warmup reads zeros for minutes unless it is cancelled. It returns the
// running warmup.
func stageWarming(t *testing.T, n *Node, id string) (staging string, w *warmupRun) {
	t.Helper()
	staging = filepath.Join(t.TempDir(), "staging")
	if err := os.MkdirAll(staging, 0o750); err != nil {
		t.Fatal(err)
	}
	f, err := os.Create(filepath.Join(staging, "big"))
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Truncate(1 << 40); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := n.NodeStageVolume(t.Context(), &csi.NodeStageVolumeRequest{VolumeId: id, StagingTargetPath: staging,
		VolumeCapability: mountCap(csi.VolumeCapability_AccessMode_MULTI_NODE_MULTI_WRITER),
		VolumeContext:    with(fakeContext(t), volumeattr.KeyWarmup, volumeattr.WarmupAll)}); err != nil {
		t.Fatal(err)
	}
	n.mu.Lock()
	w = n.warmups[id]
	n.mu.Unlock()
	if w == nil {
		t.Fatal("no warmup runs after staging a volume with the warmup attribute")
	}
	select {
	case <-w.done:
		t.Fatal("the warmup of a 1 TiB file ended on its own")
	default:
	}
	return staging, w
}

// stopped fails the test unless w has stopped.
func stopped(t *testing.T, w *warmupRun, after string) {
	t.Helper()
	select {
	case <-w.done:
	default:
		t.Fatalf("the warmup still runs after %s returned", after)
	}
}

func TestWarmupStopsAtUnstage(t *testing.T) {
	n, _, _ := fakeNode(t)
	staging, w := stageWarming(t, n, "v")
	if _, err := n.NodeUnstageVolume(t.Context(), &csi.NodeUnstageVolumeRequest{VolumeId: "v", StagingTargetPath: staging}); err != nil {
		t.Fatal(err)
	}
	stopped(t, w, "NodeUnstageVolume")
	n.mu.Lock()
	left := len(n.warmups)
	n.mu.Unlock()
	if left != 0 {
		t.Errorf("%d warmups still registered after unstage", left)
	}
}

func TestWarmupStopsAtClose(t *testing.T) {
	n, _, _ := fakeNode(t)
	_, w := stageWarming(t, n, "v")
	n.Close()
	stopped(t, w, "Node.Close")
}

func TestWarmupOfOtherVolumeKeepsRunning(t *testing.T) {
	n, _, _ := fakeNode(t)
	staging, w := stageWarming(t, n, "a")
	_, other := stageWarming(t, n, "b")
	if _, err := n.NodeUnstageVolume(t.Context(), &csi.NodeUnstageVolumeRequest{VolumeId: "a", StagingTargetPath: staging}); err != nil {
		t.Fatal(err)
	}
	stopped(t, w, "NodeUnstageVolume")
	select {
	case <-other.done:
		t.Error("unstaging one volume stopped the warmup of another")
	default:
	}
}

// TestRecordDataset: only a warmup that walked and read all of a volume
// tells its size, and telling it asks for a cache status pass.
func TestRecordDataset(t *testing.T) {
	full := warmup.Result{Progress: warmup.Progress{FoundBytes: 5 << 20, FoundFiles: 20, WalkDone: true, Done: true}}
	tests := []struct {
		name   string
		res    warmup.Result
		wantOK bool
	}{
		{"complete", full, true},
		{"walk unfinished", warmup.Result{Progress: warmup.Progress{FoundBytes: 1, FoundFiles: 1}}, false},
		{"errors", warmup.Result{Progress: warmup.Progress{FoundBytes: 1, WalkDone: true, Errors: 1}}, false},
		{"metadata only", warmup.Result{Progress: warmup.Progress{FoundBytes: 1, WalkDone: true, MetadataOnly: true}}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			told := 0
			n := &Node{cfg: NodeConfig{VolumesChanged: func() { told++ }}, datasets: map[string]Dataset{}}
			n.recordDataset("vol", tt.res)
			d, ok := n.Dataset("vol")
			if ok != tt.wantOK || (ok && d != (Dataset{Bytes: 5 << 20, Objects: 20})) || (told == 1) != tt.wantOK {
				t.Errorf("Dataset = %+v, %t (told %d times); want known %t", d, ok, told, tt.wantOK)
			}
		})
	}
}

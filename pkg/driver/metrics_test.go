package driver

import (
	"path/filepath"
	"testing"

	"github.com/basin-csi/basin/internal/promtest"
	"github.com/container-storage-interface/spec/lib/go/csi"
	"github.com/prometheus/client_golang/prometheus"
)

// TestCallMetrics counts CreateVolume outcomes by code through a served
// controller: the provisioning counts and errors.
func TestCallMetrics(t *testing.T) {
	ctrl, err := NewController(ControllerConfig{})
	if err != nil {
		t.Fatal(err)
	}
	reg := prometheus.NewRegistry()
	cc := serveDriver(t, Config{Version: "test", Metrics: reg}, ctrl).controller
	bucket := t.TempDir()
	req := &csi.CreateVolumeRequest{Name: "pvc-metrics", VolumeCapabilities: rwx(),
		Parameters: map[string]string{"backend": "file", "bucket": bucket}}
	if _, err := cc.CreateVolume(t.Context(), req); err != nil {
		t.Fatal(err)
	}
	if _, err := cc.CreateVolume(t.Context(), &csi.CreateVolumeRequest{Name: "pvc-bad", VolumeCapabilities: rwx(),
		Parameters: map[string]string{"backend": "file", "bucket": bucket, "cacheSizee": "1Gi"}}); err == nil {
		t.Fatal("CreateVolume with an unknown parameter succeeded")
	}
	for _, tt := range []struct {
		code string
		want float64
	}{{"OK", 1}, {"InvalidArgument", 1}} {
		if got, ok := promtest.Value(t, reg, "basin_csi_operations_total", map[string]string{"method": "CreateVolume", "code": tt.code}); !ok || got != tt.want {
			t.Errorf("CreateVolume %s = %v (present %v), want %v", tt.code, got, ok, tt.want)
		}
	}
	// A second set of call metrics on the same registry reuses the first.
	if _, err := newCallMetrics(reg); err != nil {
		t.Errorf("registering again: %v", err)
	}
}

func TestStagedVolumes(t *testing.T) {
	n, _, _ := fakeNode(t)
	ctx := t.Context()
	staging := filepath.Join(t.TempDir(), "staging")
	if _, err := n.NodeStageVolume(ctx, &csi.NodeStageVolumeRequest{VolumeId: "vol/1", StagingTargetPath: staging,
		VolumeCapability: mountCap(csi.VolumeCapability_AccessMode_MULTI_NODE_MULTI_WRITER), VolumeContext: fakeContext(t)}); err != nil {
		t.Fatal(err)
	}
	vols := n.StagedVolumes(ctx)
	if len(vols) != 1 || vols[0].ID != "vol/1" || !vols[0].Served || !vols[0].Healthy ||
		vols[0].CacheDir != cacheDirFor(n.cfg.CacheRoot, "vol/1") {
		t.Errorf("staged volumes = %+v", vols)
	}
	if h := n.Heals(); h != 0 {
		t.Errorf("heals = %d before any", h)
	}
}

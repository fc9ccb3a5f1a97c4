package warmupctl

import (
	"os"
	"path/filepath"
	"slices"
	"testing"

	basinv1 "github.com/basin-csi/basin/pkg/api/v1alpha1"
	"github.com/basin-csi/basin/pkg/warmup"
)

func TestPodArgs(t *testing.T) {
	spec := basinv1.WarmupSpec{Paths: []string{"train", "../../etc", "/val/"}, Threads: 16, MetadataOnly: true}
	got := PodArgs(&spec)
	want := []string{"warmup", "--no-state", "--interval=10s", "--result=/dev/termination-log", "--threads=16", "--metadata-only", "/data/train", "/data/etc", "/data/val"}
	if !slices.Equal(got, want) {
		t.Errorf("args %q, want %q", got, want)
	}
	if got := PodArgs(&basinv1.WarmupSpec{}); got[len(got)-1] != "/data" {
		t.Errorf("no paths: args %q end in %q, want the whole claim /data", got, got[len(got)-1])
	}
}

// TestApplyReport: what the engine's Report says reaches the node's
// status, whatever the Report's own spelling of a fit.
func TestApplyReport(t *testing.T) {
	for _, tc := range []struct {
		fits, want string
	}{{warmup.FitsYes, basinv1.FitsYes}, {warmup.FitsNo, basinv1.FitsNo}, {warmup.FitsUnknown, basinv1.FitsUnknown}, {"", basinv1.FitsUnknown}} {
		r := warmup.Report{Files: 3, Bytes: 30, BytesPerSecond: 10, Errors: 1, Fits: tc.fits, Verdict: "v"}
		file := filepath.Join(t.TempDir(), "report")
		if err := r.WriteFile(file); err != nil {
			t.Fatal(err)
		}
		msg, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		var n basinv1.WarmupNodeStatus
		if !applyReport(&n, string(msg)) {
			t.Fatalf("fits %q: report not read: %s", tc.fits, msg)
		}
		want := basinv1.WarmupNodeStatus{Files: 3, Bytes: 30, BytesPerSecond: 10, Errors: 1, Fits: tc.want, Message: "v"}
		if n != want {
			t.Errorf("fits %q: got %+v, want %+v", tc.fits, n, want)
		}
	}
	var n basinv1.WarmupNodeStatus
	if applyReport(&n, "exec format error") || n != (basinv1.WarmupNodeStatus{}) {
		t.Errorf("a message that is no Report was read: %+v", n)
	}
}

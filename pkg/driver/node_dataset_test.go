package driver

import (
	"testing"

	"github.com/basin-csi/basin/pkg/warmup"
)

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

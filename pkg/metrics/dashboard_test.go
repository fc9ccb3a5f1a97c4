package metrics

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/basin-csi/basin/pkg/cache"
	"github.com/basin-csi/basin/pkg/fuse"
	"github.com/basin-csi/basin/pkg/objstore"
	"github.com/basin-csi/basin/pkg/objstore/objstoretest"
)

// dashboard is the Grafana dashboard shipped in deploy/.
const dashboard = "../../deploy/grafana/basin.json"

// csiMetrics are exported by pkg/driver (its call interceptor).
var csiMetrics = []string{"basin_csi_operations_total", "basin_csi_operation_duration_seconds"}

// exportedNames gathers every metric family this package produces, after
// one request of each kind so that every labelled family has a child.
func exportedNames(t *testing.T) map[string]bool {
	t.Helper()
	ctx := context.Background()
	reg, sm, err := NewProcessRegistry()
	if err != nil {
		t.Fatal(err)
	}
	if err := RegisterSources(reg, Sources{
		Cache: func() cache.Stats { return cache.Stats{Tiered: true} }, Pinned: func() int64 { return 0 }, FS: func() fuse.Stats { return fuse.Stats{} },
	}); err != nil {
		t.Fatal(err)
	}
	s := sm.Wrap(objstoretest.NewFake())
	_, _ = s.Put(ctx, "k", bytes.NewReader([]byte("x")), objstore.PutOptions{Size: 1})
	if rc, _, err := s.Read(ctx, "k", objstore.ReadOptions{Length: -1}); err == nil {
		_ = rc.Close()
	}
	_, _ = s.Stat(ctx, "missing")
	node := prometheus.NewRegistry()
	g, err := NewNodeGatherer(node, fakeNode{vols: []NodeVolume{{VolumeID: "v", CacheDir: t.TempDir()}}}, NodeOptions{})
	if err != nil {
		t.Fatal(err)
	}
	names := map[string]bool{}
	for _, gg := range []prometheus.Gatherer{reg, g} {
		mfs, err := gg.Gather()
		if err != nil {
			t.Fatal(err)
		}
		for _, mf := range mfs {
			names[mf.GetName()] = true
		}
	}
	for _, n := range csiMetrics {
		names[n] = true
	}
	return names
}

// TestDashboardMetricsExist checks that every basin_ metric the Grafana
// dashboard queries is one Basin exports, so a rename cannot leave the
// dashboard silently empty.
func TestDashboardMetricsExist(t *testing.T) {
	raw, err := os.ReadFile(dashboard)
	if err != nil {
		t.Fatal(err)
	}
	var d struct {
		Panels []struct {
			Title   string `json:"title"`
			Targets []struct {
				Expr string `json:"expr"`
			} `json:"targets"`
		} `json:"panels"`
	}
	if err := json.Unmarshal(raw, &d); err != nil {
		t.Fatalf("%s: %v", dashboard, err)
	}
	names := exportedNames(t)
	used := 0
	re := regexp.MustCompile(`\bbasin_[a-z_]+`)
	for _, p := range d.Panels {
		for _, tg := range p.Targets {
			for _, m := range re.FindAllString(tg.Expr, -1) {
				used++
				base := m
				for _, suffix := range []string{"_bucket", "_sum", "_count"} {
					if b, ok := strings.CutSuffix(m, suffix); ok && names[b] {
						base = b
					}
				}
				if !names[base] {
					t.Errorf("panel %q queries %s, which Basin does not export", p.Title, m)
				}
			}
		}
	}
	if used < 20 {
		t.Errorf("only %d metric references in the dashboard", used)
	}
}

package manifests

import (
	"bytes"
	"context"
	"encoding/json"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/basin-csi/basin/pkg/cache"
	"github.com/basin-csi/basin/pkg/cachestatus"
	"github.com/basin-csi/basin/pkg/driver"
	"github.com/basin-csi/basin/pkg/fuse"
	"github.com/basin-csi/basin/pkg/metrics"
	"github.com/basin-csi/basin/pkg/objstore"
	"github.com/basin-csi/basin/pkg/objstore/objstoretest"
	"github.com/basin-csi/basin/pkg/placement"
	"github.com/basin-csi/basin/pkg/tiersweep"
)

// dashboardFile is the Grafana dashboard shipped for Basin's metrics.
const dashboardFile = "deploy/grafana/basin.json"

// recorder registers collectors with a registry and keeps them, so that
// the names they describe are known even for a labelled family that has
// no child yet (a gathered registry leaves those out).
type recorder struct {
	*prometheus.Registry
	collectors []prometheus.Collector
}

func (r *recorder) Register(c prometheus.Collector) error {
	r.collectors = append(r.collectors, c)
	return r.Registry.Register(c)
}

func (r *recorder) MustRegister(cs ...prometheus.Collector) {
	for _, c := range cs {
		if err := r.Register(c); err != nil {
			panic(err)
		}
	}
}

// fqName reads a metric's name from its description, the only place a
// Desc shows it.
var fqName = regexp.MustCompile(`fqName: "([^"]+)"`)

// names returns the names of the recorded collectors' metrics and of every
// family the registries gather.
func (r *recorder) names(t *testing.T, also ...prometheus.Gatherer) map[string]bool {
	t.Helper()
	out := map[string]bool{}
	ch := make(chan *prometheus.Desc)
	go func() {
		for _, c := range r.collectors {
			c.Describe(ch)
		}
		close(ch)
	}()
	for d := range ch {
		if m := fqName.FindStringSubmatch(d.String()); m != nil {
			out[m[1]] = true
		}
	}
	for _, g := range append(also, r.Registry) {
		mfs, err := g.Gather()
		if err != nil {
			t.Fatal(err)
		}
		for _, mf := range mfs {
			out[mf.GetName()] = true
		}
	}
	return out
}

// nodeSource is a node plugin with one staged volume.
type nodeSource struct{ cacheDir string }

func (n nodeSource) Heals() int64 { return 0 }
func (n nodeSource) Volumes(context.Context) []metrics.NodeVolume {
	return []metrics.NodeVolume{{VolumeID: "v", CacheDir: n.cacheDir, Served: true, Healthy: true}}
}

// exportedMetrics registers the metrics of every Basin process the way
// the binaries do (the same constructors) and returns their names: the
// FUSE process's (pkg/metrics), the node plugin's (its gatherer, the CSI
// call metrics, the cache status reporter) and the controller's (CSI
// calls, the upload sweep, the tiers' sweep, the placement webhook, the VolumeCache
// clean-up).
func exportedMetrics(t *testing.T) map[string]bool {
	t.Helper()
	ctx := context.Background()
	// A FUSE process.
	proc, store, err := metrics.NewProcessRegistry()
	if err != nil {
		t.Fatal(err)
	}
	if err := metrics.RegisterSources(proc, metrics.Sources{
		// Tiered: a volume with a shared cache tier exports its families too.
		Cache: func() cache.Stats { return cache.Stats{Tiered: true} }, Pinned: func() int64 { return 0 }, FS: func() fuse.Stats { return fuse.Stats{} },
	}); err != nil {
		t.Fatal(err)
	}
	s := store.Wrap(objstoretest.NewFake())
	if _, err := s.Put(ctx, "k", bytes.NewReader([]byte("x")), objstore.PutOptions{Size: 1}); err != nil {
		t.Fatal(err)
	}
	if rc, _, err := s.Read(ctx, "k", objstore.ReadOptions{Length: -1}); err == nil {
		_ = rc.Close()
	}
	_, _ = s.Stat(ctx, "missing")

	// The plugins: CSI call metrics are registered when the driver
	// serves (a cancelled context stops it at once).
	plugin := &recorder{Registry: prometheus.NewRegistry()}
	ctl, err := driver.NewController(driver.ControllerConfig{})
	if err != nil {
		t.Fatal(err)
	}
	d, err := driver.New(driver.Config{Metrics: plugin}, ctl)
	if err != nil {
		t.Fatal(err)
	}
	lis, err := net.Listen("unix", filepath.Join(t.TempDir(), "csi.sock"))
	if err != nil {
		t.Fatal(err)
	}
	stopped, cancel := context.WithCancel(ctx)
	cancel()
	if err := d.Serve(stopped, lis); err != nil {
		t.Fatal(err)
	}
	if _, err := driver.NewUploadSweeper(ctl, plugin); err != nil {
		t.Fatal(err)
	}
	if _, err := tiersweep.NewMetrics(plugin); err != nil {
		t.Fatal(err)
	}
	if _, err := placement.NewMetrics(plugin); err != nil {
		t.Fatal(err)
	}
	if _, err := cachestatus.NewCleanup(nil, nil, cachestatus.CleanupOptions{Metrics: plugin}); err != nil {
		t.Fatal(err)
	}
	rep, err := cachestatus.NewReporter(nil, nil, cachestatus.Config{NodeName: "n", CacheRoot: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	plugin.MustRegister(rep.Collectors()...)
	node, err := metrics.NewNodeGatherer(plugin.Registry, nodeSource{cacheDir: t.TempDir()}, metrics.NodeOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return plugin.names(t, proc, node)
}

// promQLMetric matches the metric names of Basin's families and of the
// process collector in a PromQL expression.
var promQLMetric = regexp.MustCompile(`\b(?:basin|process)_[a-z0-9_]+\b`)

// dashboardQueries returns every PromQL expression of the dashboard: the
// panels' targets (rows' nested panels included) and the variables'
// queries, each with where it is.
func dashboardQueries(t *testing.T) map[string][]string {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(repoRoot, dashboardFile))
	if err != nil {
		t.Fatal(err)
	}
	var d struct {
		Panels     []json.RawMessage `json:"panels"`
		Templating struct {
			List []struct {
				Name  string `json:"name"`
				Query any    `json:"query"`
			} `json:"list"`
		} `json:"templating"`
	}
	if err := json.Unmarshal(raw, &d); err != nil {
		t.Fatalf("%s: %v", dashboardFile, err)
	}
	out := map[string][]string{}
	var walk func(panels []json.RawMessage)
	walk = func(panels []json.RawMessage) {
		for _, r := range panels {
			var p struct {
				Title   string            `json:"title"`
				Panels  []json.RawMessage `json:"panels"`
				Targets []struct {
					Expr string `json:"expr"`
				} `json:"targets"`
			}
			if err := json.Unmarshal(r, &p); err != nil {
				t.Fatalf("%s: %v", dashboardFile, err)
			}
			for _, tg := range p.Targets {
				out["panel "+p.Title] = append(out["panel "+p.Title], tg.Expr)
			}
			walk(p.Panels)
		}
	}
	walk(d.Panels)
	for _, v := range d.Templating.List {
		switch q := v.Query.(type) {
		case string:
			out["variable "+v.Name] = append(out["variable "+v.Name], q)
		case map[string]any:
			if s, ok := q["query"].(string); ok {
				out["variable "+v.Name] = append(out["variable "+v.Name], s)
			}
		}
	}
	return out
}

// unexported returns the metrics queries use that are not in names; a
// histogram's _bucket, _sum and _count series belong to its name.
func unexported(queries map[string][]string, names map[string]bool) (missing []string, used int) {
	for where, exprs := range queries {
		for _, e := range exprs {
			for _, m := range promQLMetric.FindAllString(e, -1) {
				used++
				base := m
				for _, suffix := range []string{"_bucket", "_sum", "_count"} {
					if b, ok := strings.CutSuffix(m, suffix); ok && names[b] {
						base = b
					}
				}
				if !names[base] {
					missing = append(missing, where+": "+m)
				}
			}
		}
	}
	slices.Sort(missing)
	return missing, used
}

// TestDashboardMetricsExist: every metric the Grafana dashboard queries
// is one a Basin binary exports, so a rename cannot leave a panel silently
// empty.
func TestDashboardMetricsExist(t *testing.T) {
	names := exportedMetrics(t)
	for _, want := range []string{"basin_csi_operations_total", "basin_node_heals_total", "basin_cache_hits_total", "basin_placement_decisions_total", "process_resident_memory_bytes"} {
		if !names[want] {
			t.Fatalf("%s is not among the exported metrics found (%d): the registration changed, fix exportedMetrics", want, len(names))
		}
	}
	missing, used := unexported(dashboardQueries(t), names)
	for _, m := range missing {
		t.Errorf("%s queries a metric Basin does not export", m)
	}
	if used < 20 {
		t.Errorf("only %d metric references in the dashboard", used)
	}
	t.Logf("%d metric references, %d exported metrics", used, len(names))
}

// TestUnexportedFindsUnknownMetric: the check catches a renamed metric in
// a panel and in a variable, and accepts a histogram's series.
func TestUnexportedFindsUnknownMetric(t *testing.T) {
	names := map[string]bool{"basin_a_total": true, "basin_h_seconds": true}
	queries := map[string][]string{
		"panel p":    {`rate(basin_a_total[5m]) / rate(basin_b_total[5m])`, `histogram_quantile(0.9, rate(basin_h_seconds_bucket[5m]))`},
		"variable v": {`label_values(basin_c, pod)`},
	}
	missing, used := unexported(queries, names)
	if want := []string{"panel p: basin_b_total", "variable v: basin_c"}; !slices.Equal(missing, want) || used != 4 {
		t.Errorf("missing %q used %d, want %q and 4", missing, used, want)
	}
}

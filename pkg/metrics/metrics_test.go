package metrics

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/basin-csi/basin/internal/promtest"
	"github.com/basin-csi/basin/pkg/admin"
	"github.com/basin-csi/basin/pkg/cache"
	"github.com/basin-csi/basin/pkg/fuse"
	"github.com/basin-csi/basin/pkg/objstore"
	"github.com/basin-csi/basin/pkg/objstore/objstoretest"
)

func TestStoreMetrics(t *testing.T) {
	ctx := context.Background()
	reg, sm, err := NewProcessRegistry()
	if err != nil {
		t.Fatal(err)
	}
	fake := objstoretest.NewFake()
	s := sm.Wrap(fake)
	data := bytes.Repeat([]byte("x"), 1000)
	if _, err := s.Put(ctx, "a", bytes.NewReader(data), objstore.PutOptions{Size: 1000}); err != nil {
		t.Fatal(err)
	}
	for range 2 {
		rc, _, err := s.Read(ctx, "a", objstore.ReadOptions{Offset: 100, Length: -1})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := io.Copy(io.Discard, rc); err != nil {
			t.Fatal(err)
		}
		_ = rc.Close()
		_ = rc.Close() // a second close observes nothing
	}
	if _, err := s.Stat(ctx, "missing"); !errors.Is(err, objstore.ErrNotFound) {
		t.Fatalf("stat: %v", err)
	}
	fake.SetError(objstoretest.OpRead, objstore.ErrUnavailable)
	if _, _, err := s.Read(ctx, "a", objstore.ReadOptions{Length: -1}); err == nil {
		t.Fatal("read did not fail")
	}
	if _, err := s.List(ctx, objstore.ListOptions{}); err != nil {
		t.Fatal(err)
	}

	tests := []struct {
		name   string
		labels map[string]string
		want   float64
	}{
		{"basin_bucket_requests_total", map[string]string{"op": "put"}, 1},
		{"basin_bucket_requests_total", map[string]string{"op": "get"}, 3},
		{"basin_bucket_requests_total", map[string]string{"op": "stat"}, 1},
		{"basin_bucket_requests_total", map[string]string{"op": "list"}, 1},
		{"basin_bucket_bytes_total", map[string]string{"op": "get"}, 1800},
		{"basin_bucket_bytes_total", map[string]string{"op": "put"}, 1000},
		{"basin_bucket_request_errors_total", map[string]string{"op": "stat", "reason": "not_found"}, 1},
		{"basin_bucket_request_errors_total", map[string]string{"op": "get", "reason": "unavailable"}, 1},
		{"basin_bucket_request_duration_seconds", map[string]string{"op": "get"}, 3},
		{"basin_bucket_get_duration_seconds", nil, 2},
	}
	for _, tt := range tests {
		got, ok := promtest.Value(t, reg, tt.name, tt.labels)
		if !ok || got != tt.want {
			t.Errorf("%s%v = %v (present %v), want %v", tt.name, tt.labels, got, ok, tt.want)
		}
	}
	if _, ok := promtest.Value(t, reg, "process_resident_memory_bytes", nil); !ok {
		t.Error("no process metrics")
	}
}

func TestReason(t *testing.T) {
	tests := []struct {
		err  error
		want string
	}{
		{objstore.ErrAccessDenied, "access_denied"},
		{errors.Join(errors.New("ctx"), objstore.ErrThrottled), "throttled"},
		{context.DeadlineExceeded, "timeout"},
		{errors.New("boom"), "other"},
	}
	for _, tt := range tests {
		if got := Reason(tt.err); got != tt.want {
			t.Errorf("Reason(%v) = %q, want %q", tt.err, got, tt.want)
		}
	}
}

func TestSources(t *testing.T) {
	reg := prometheus.NewRegistry()
	err := RegisterSources(reg, Sources{
		Cache: func() cache.Stats {
			return cache.Stats{Hits: 5, HitBytes: 500, UsedBytes: 42, Capacity: 100, BufferBytes: 8 << 20,
				PrefetchObjects: 6, PrefetchBytes: 600, PrefetchReadBytes: 400, PrefetchEvictedBytes: 100}
		},
		Pinned: func() int64 { return 3 },
		FS:     func() fuse.Stats { return fuse.Stats{PassthroughOpens: 9, Uploads: 2} },
	})
	if err != nil {
		t.Fatal(err)
	}
	for name, want := range map[string]float64{
		"basin_cache_hits_total": 5, "basin_cache_hit_bytes_total": 500, "basin_cache_used_bytes": 42,
		"basin_cache_capacity_bytes": 100, "basin_cache_pinned_objects": 3, "basin_cache_buffer_bytes": 8 << 20,
		"basin_fuse_passthrough_opens_total": 9, "basin_fuse_uploads_total": 2, "basin_cache_misses_total": 0,
		"basin_cache_prefetch_objects_total": 6, "basin_cache_prefetch_bytes_total": 600,
		"basin_cache_prefetch_read_bytes_total": 400, "basin_cache_prefetch_evicted_bytes_total": 100,
	} {
		if got, ok := promtest.Value(t, reg, name, nil); !ok || got != want {
			t.Errorf("%s = %v (present %v), want %v", name, got, ok, want)
		}
	}
}

// fakeNode is a NodeSource with fixed volumes.
type fakeNode struct{ vols []NodeVolume }

func (f fakeNode) Heals() int64                         { return 4 }
func (f fakeNode) Volumes(context.Context) []NodeVolume { return f.vols }

// serveVolume serves a registry with one counter of value v on an admin
// socket in a new directory.
func serveVolume(t *testing.T, v float64) string {
	t.Helper()
	dir := t.TempDir()
	reg, _, err := NewProcessRegistry()
	if err != nil {
		t.Fatal(err)
	}
	c := prometheus.NewCounter(prometheus.CounterOpts{Name: "basin_cache_hits_total", Help: "hits"})
	c.Add(v)
	reg.MustRegister(c)
	srv, err := admin.Serve(admin.SocketPath(dir), admin.Handler(nil, admin.Info{}, reg))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = srv.Close() })
	return dir
}

func TestNodeGatherer(t *testing.T) {
	node := fakeNode{vols: []NodeVolume{
		{VolumeID: "vol-a", CacheDir: serveVolume(t, 10), Served: true, Healthy: true, Heals: 1},
		{VolumeID: "vol-b", CacheDir: serveVolume(t, 20), Served: true, Healthy: true},
		{VolumeID: "vol-dead", CacheDir: t.TempDir(), Served: false, Heals: 3},
	}}
	reg, _, err := NewProcessRegistry() // the node's own process metrics
	if err != nil {
		t.Fatal(err)
	}
	g, err := NewNodeGatherer(reg, node, NodeOptions{})
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name   string
		labels map[string]string
		want   float64
	}{
		{"basin_cache_hits_total", map[string]string{"volume": "vol-a"}, 10},
		{"basin_cache_hits_total", map[string]string{"volume": "vol-b"}, 20},
		{"basin_volume_scrape_up", map[string]string{"volume": "vol-a"}, 1},
		{"basin_volume_scrape_up", map[string]string{"volume": "vol-dead"}, 0},
		{"basin_volume_healthy", map[string]string{"volume": "vol-a"}, 1},
		{"basin_volume_healthy", map[string]string{"volume": "vol-dead"}, 0},
		{"basin_volume_heals_total", map[string]string{"volume": "vol-dead"}, 3},
		{"basin_node_heals_total", nil, 4},
		{"basin_node_staged_volumes", nil, 3},
	}
	for _, tt := range tests {
		got, ok := promtest.Value(t, g, tt.name, tt.labels)
		if !ok || got != tt.want {
			t.Errorf("%s%v = %v (present %v), want %v", tt.name, tt.labels, got, ok, tt.want)
		}
	}
	// The node's and the volumes' process metrics share families.
	mfs, _ := g.Gather()
	for _, mf := range mfs {
		if mf.GetName() == "process_start_time_seconds" && len(mf.Metric) != 3 {
			t.Errorf("process_start_time_seconds has %d series, want the node's and two volumes'", len(mf.Metric))
		}
	}
	// And the whole thing renders as text.
	rec := httptest.NewRecorder()
	promhttp.HandlerFor(g, promhttp.HandlerOpts{}).ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	body := rec.Body.String()
	if rec.Code != 200 || !strings.Contains(body, `basin_cache_hits_total{volume="vol-b"} 20`) {
		t.Errorf("rendered %d:\n%s", rec.Code, body)
	}
}

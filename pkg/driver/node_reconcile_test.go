package driver

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"

	"github.com/basin-csi/basin/pkg/supervisor/supervisortest"
)

// gatedStarts holds the FUSE process starts of some volumes until opened,
// counting how many wait at once.
type gatedStarts struct {
	gate chan struct{}
	once sync.Once
	held map[string]bool // volume IDs whose starts wait

	mu      sync.Mutex // guards waiting, most
	waiting int
	most    int
	arrived chan struct{} // one send per held start
}

func newGatedStarts(ids ...string) *gatedStarts {
	g := &gatedStarts{gate: make(chan struct{}), held: map[string]bool{}, arrived: make(chan struct{}, len(ids))}
	for _, id := range ids {
		g.held[id] = true
	}
	return g
}

func (g *gatedStarts) onStart(p *supervisortest.Process) error {
	i := slices.Index(p.Spec.Args, "--volume-id")
	if i < 0 || i+1 >= len(p.Spec.Args) || !g.held[p.Spec.Args[i+1]] {
		return nil
	}
	g.mu.Lock()
	g.waiting++
	g.most = max(g.most, g.waiting)
	g.mu.Unlock()
	g.arrived <- struct{}{}
	<-g.gate
	g.mu.Lock()
	g.waiting--
	g.mu.Unlock()
	return nil
}

func (g *gatedStarts) open() { g.once.Do(func() { close(g.gate) }) }

func (g *gatedStarts) peak() int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.most
}

// TestReconcileDoesNotDelayServing restarts a node with five staged
// volumes whose FUSE processes do not start until the test says so: the
// new node serves at once, takes at most ReconcileWorkers volumes back at
// a time, makes calls for a volume not taken back yet wait (Aborted when
// their deadline ends first), serves other volumes meanwhile, and reports
// ready once every volume was taken back.
func TestReconcileDoesNotDelayServing(t *testing.T) {
	dir := t.TempDir()
	k := supervisortest.NewKernel()
	first := newFakeNode(t, fakeNodeConfig(dir, k, &supervisortest.Runner{}))
	ctx := t.Context()
	vc := mountCap(csi.VolumeCapability_AccessMode_MULTI_NODE_MULTI_WRITER)
	vctx := fakeContext(t)
	var ids []string
	for i := range 5 {
		id := fmt.Sprintf("v%d", i)
		ids = append(ids, id)
		if _, err := first.NodeStageVolume(ctx, &csi.NodeStageVolumeRequest{VolumeId: id, StagingTargetPath: filepath.Join(dir, "staging", id),
			VolumeCapability: vc, VolumeContext: vctx}); err != nil {
			t.Fatal(err)
		}
	}
	target := filepath.Join(dir, "pod", "mount")
	if _, err := first.NodePublishVolume(ctx, &csi.NodePublishVolumeRequest{VolumeId: "v0", StagingTargetPath: filepath.Join(dir, "staging", "v0"),
		TargetPath: target, VolumeCapability: vc}); err != nil {
		t.Fatal(err)
	}
	first.Close() // the mounts stay, as after a node plugin restart

	g := newGatedStarts(ids...)
	t.Cleanup(g.open) // before the node's Close (cleanups run last first)
	cfg := fakeNodeConfig(dir, k, &supervisortest.Runner{OnStart: g.onStart})
	cfg.ReconcileWorkers = 2
	made := make(chan *Node, 1)
	go func() { made <- newFakeNode(t, cfg) }()
	var n *Node
	select {
	case n = <-made:
	case <-time.After(10 * time.Second):
		g.open()
		t.Fatal("NewNode waited for the volumes to be taken back")
	}
	for range 2 {
		<-g.arrived
	}
	time.Sleep(100 * time.Millisecond) // a third start, if unbounded, arrives now
	if p := g.peak(); p != 2 {
		t.Errorf("%d volumes taken back at once, want ReconcileWorkers = 2", p)
	}
	if ready, err := n.probe(ctx); err == nil && ready {
		t.Error("the node is ready while taking volumes back")
	}

	short := func() context.Context {
		c, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
		t.Cleanup(cancel)
		return c
	}
	_, err := n.NodeGetVolumeStats(short(), &csi.NodeGetVolumeStatsRequest{VolumeId: "v0", VolumePath: target})
	wantCode(t, "stats of a volume being taken back", err, codes.Aborted)
	_, err = n.NodePublishVolume(short(), &csi.NodePublishVolumeRequest{VolumeId: "v4", StagingTargetPath: filepath.Join(dir, "staging", "v4"),
		TargetPath: filepath.Join(dir, "pod2", "mount"), VolumeCapability: vc})
	wantCode(t, "publish of a volume being taken back", err, codes.Aborted)
	h, err := n.NodeGetVolumeHealth(ctx, &csi.NodeGetVolumeHealthRequest{VolumeId: "v3"})
	if e := h.GetVolumeHealth().GetHealthStatuses(); err != nil || len(e) != 1 || e[0].GetReason() != reasonTakingBack ||
		e[0].GetStatus() != csi.VolumeHealthErrorType_DEGRADED {
		t.Errorf("health of a volume being taken back = %v, %v; want DEGRADED %s", e, err, reasonTakingBack)
	}
	// Another volume is served meanwhile.
	if _, err := n.NodeStageVolume(ctx, &csi.NodeStageVolumeRequest{VolumeId: "new", StagingTargetPath: filepath.Join(dir, "staging", "new"),
		VolumeCapability: vc, VolumeContext: vctx}); err != nil {
		t.Errorf("staging another volume during the reconcile: %v", err)
	}

	// A call that may wait gets its answer once the volume is back.
	stats := make(chan error, 1)
	go func() {
		_, err := n.NodeGetVolumeStats(ctx, &csi.NodeGetVolumeStatsRequest{VolumeId: "v0", VolumePath: target})
		stats <- err
	}()
	g.open()
	select {
	case err := <-stats:
		if err != nil {
			t.Errorf("stats after the volume was taken back: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("stats still waiting after the reconcile")
	}
	select {
	case <-n.reconciled:
	case <-time.After(10 * time.Second):
		t.Fatal("the reconcile did not finish")
	}
	if ready, err := n.probe(ctx); !ready {
		t.Errorf("probe after the reconcile: ready=%v, %v", ready, err)
	}
	if p := g.peak(); p != 2 {
		t.Errorf("%d volumes taken back at once, want 2", p)
	}
	for _, id := range ids {
		if _, err := n.check(ctx, id); err != nil {
			t.Errorf("volume %s not taken back: %v", id, err)
		}
	}
	if m, ok := k.Mounted(target); !ok || m.Source != filepath.Join(dir, "staging", "v0") {
		t.Errorf("target after the reconcile = %+v, %v; want a bind of the staging path", m, ok)
	}
}

// readiness is a Service that reports a fixed readiness.
type readiness bool

func (readiness) register(*grpc.Server)                           {}
func (readiness) pluginCapabilities() []*csi.PluginCapability     { return nil }
func (r readiness) probe(context.Context) (ready bool, err error) { return bool(r), nil }

// TestProbeReadiness: Probe is ready when every service is; /healthz is
// healthy either way (a node still taking volumes back is alive, and the
// liveness probe must not restart it).
func TestProbeReadiness(t *testing.T) {
	for _, tc := range []struct {
		services []Service
		want     bool
	}{
		{[]Service{readiness(true)}, true},
		{[]Service{readiness(false)}, false},
		{[]Service{readiness(true), readiness(false)}, false},
	} {
		h := serveDriver(t, Config{Version: "test", NodeID: "n"}, tc.services...)
		p, err := h.identity.Probe(t.Context(), &csi.ProbeRequest{})
		if err != nil || p.GetReady().GetValue() != tc.want {
			t.Errorf("Probe with %v = %v, %v; want ready=%v", tc.services, p, err, tc.want)
		}
		health := httptest.NewServer(&healthHandler{sock: strings.TrimPrefix(h.endpoint, "unix://")})
		resp, err := http.Get(health.URL)
		if err != nil {
			t.Fatal(err)
		}
		_ = resp.Body.Close()
		health.Close()
		if resp.StatusCode != http.StatusOK {
			t.Errorf("/healthz with %v = %d, want 200 whether ready or not", tc.services, resp.StatusCode)
		}
	}
}

package cachestatus

import (
	"context"
	"errors"
	"os"
	"slices"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	"github.com/basin-csi/basin/internal/cacheusage"
	basinv1 "github.com/basin-csi/basin/pkg/api/v1alpha1"
	"github.com/basin-csi/basin/pkg/cache"
	"github.com/basin-csi/basin/pkg/mountspec"
	"github.com/basin-csi/basin/pkg/objstore/objstoretest"
)

const testNode = "node-a"

// fixedVolumes is Volumes over a fixed map.
type fixedVolumes struct {
	synced bool
	pvs    map[string][]string
}

func (f *fixedVolumes) Synced() bool                             { return f.synced }
func (f *fixedVolumes) PersistentVolumes(handle string) []string { return f.pvs[handle] }

// reporterEnv is a Reporter over a fake API server, a settable clock and
// settable cache usage.
type reporterEnv struct {
	r      *Reporter
	c      client.Client
	vols   *fixedVolumes
	usages []cacheusage.Usage
	now    time.Time
	fail   error // returned by every write while set
}

func newReporterEnv(t *testing.T, objs ...client.Object) *reporterEnv {
	t.Helper()
	s, err := NewScheme()
	if err != nil {
		t.Fatal(err)
	}
	e := &reporterEnv{
		vols: &fixedVolumes{synced: true, pvs: map[string][]string{}},
		now:  time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC),
	}
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: testNode, UID: "node-uid"}}
	failing := func(ctx context.Context, c client.WithWatch, obj client.Object, op func() error) error {
		if e.fail != nil {
			return e.fail
		}
		return op()
	}
	e.c = fake.NewClientBuilder().WithScheme(s).
		WithStatusSubresource(&basinv1.VolumeCache{}).
		WithObjects(append([]client.Object{node}, objs...)...).
		WithInterceptorFuncs(interceptor.Funcs{
			Create: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.CreateOption) error {
				return failing(ctx, c, obj, func() error { return c.Create(ctx, obj, opts...) })
			},
			Delete: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.DeleteOption) error {
				return failing(ctx, c, obj, func() error { return c.Delete(ctx, obj, opts...) })
			},
			SubResourceUpdate: func(ctx context.Context, c client.Client, sub string, obj client.Object, opts ...client.SubResourceUpdateOption) error {
				if e.fail != nil {
					return e.fail
				}
				return c.SubResource(sub).Update(ctx, obj, opts...)
			},
		}).Build()
	e.r, err = NewReporter(e.c, e.vols, Config{NodeName: testNode, CacheRoot: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	e.r.now = func() time.Time { return e.now }
	e.r.scan = func() ([]cacheusage.Usage, error) { return e.usages, nil }
	return e
}

// writes reads the reporter's write counter of op.
func (e *reporterEnv) writes(op string) int {
	var m dto.Metric
	if err := e.r.writes.WithLabelValues(op).Write(&m); err != nil {
		panic(err)
	}
	return int(m.GetCounter().GetValue())
}

func (e *reporterEnv) get(t *testing.T, pv string) (*basinv1.VolumeCache, bool) {
	t.Helper()
	var vc basinv1.VolumeCache
	err := e.c.Get(context.Background(), client.ObjectKey{Name: ObjectName(pv, testNode)}, &vc)
	if err != nil {
		return nil, false
	}
	return &vc, true
}

func (e *reporterEnv) pass(t *testing.T) {
	t.Helper()
	if err := e.r.pass(context.Background()); err != nil {
		t.Fatalf("pass: %v", err)
	}
}

// TestReporterWritesOnlyChanges is the diff-then-write logic: a new
// cache makes an object (create and status), an unchanged one writes
// nothing until the refresh period, a change writes the status, a gone
// cache deletes the object.
func TestReporterWritesOnlyChanges(t *testing.T) {
	e := newReporterEnv(t)
	last := e.now.Add(-time.Minute)
	e.vols.pvs["bucket/ds"] = []string{"pv-ds"}
	e.usages = []cacheusage.Usage{{VolumeID: "bucket/ds", UsedBytes: 3 << 29, Objects: 7, Capacity: 10 << 30, LastAccessNano: last.UnixNano()}}
	e.pass(t)
	if e.writes("create") != 1 || e.writes("status") != 1 {
		t.Fatalf("first pass: %d creates, %d status writes; want 1 and 1", e.writes("create"), e.writes("status"))
	}
	vc, ok := e.get(t, "pv-ds")
	if !ok {
		t.Fatal("no VolumeCache after the first pass")
	}
	if vc.Spec != (basinv1.VolumeCacheSpec{VolumeName: "pv-ds", VolumeHandle: "bucket/ds", NodeName: testNode}) {
		t.Errorf("spec = %+v", vc.Spec)
	}
	if vc.Labels[basinv1.LabelVolume] != "pv-ds" || vc.Labels[basinv1.LabelNode] != testNode {
		t.Errorf("labels = %v", vc.Labels)
	}
	if len(vc.OwnerReferences) != 1 || vc.OwnerReferences[0].Kind != "Node" || vc.OwnerReferences[0].UID != "node-uid" {
		t.Errorf("owner references = %+v, want the Node", vc.OwnerReferences)
	}
	st := vc.Status
	if st.CachedBytes != 3<<29 || st.CachedSize != "1.5Gi" || st.CachedObjects != 7 || st.CapacityBytes != 10<<30 ||
		st.LastUseTime == nil || !st.LastUseTime.Equal(&metav1.Time{Time: last}) || !st.UpdateTime.Time.Equal(e.now) {
		t.Errorf("status = %+v", st)
	}
	if st.DatasetBytes != nil || st.CachedPercent != nil {
		t.Errorf("dataset fields set with no dataset size known: %+v", st)
	}

	steps := []struct {
		name        string
		advance     time.Duration
		change      func(u *cacheusage.Usage)
		wantWritten bool
	}{
		{"unchanged", 30 * time.Second, nil, false},
		{"read within the same second", 30 * time.Second, func(u *cacheusage.Usage) { u.LastAccessNano += (300 * time.Millisecond).Nanoseconds() }, false},
		{"more bytes", 30 * time.Second, func(u *cacheusage.Usage) { u.UsedBytes += 4096; u.Objects++ }, true},
		{"a later read", 30 * time.Second, func(u *cacheusage.Usage) { u.LastAccessNano += (10 * time.Second).Nanoseconds() }, true},
		{"unchanged again", DefaultRefresh - 2*time.Minute, nil, false},
		{"unchanged for the refresh period", DefaultRefresh, nil, true},
	}
	for _, s := range steps {
		before := e.writes("status")
		e.now = e.now.Add(s.advance)
		if s.change != nil {
			s.change(&e.usages[0])
		}
		e.pass(t)
		if written := e.writes("status") > before; written != s.wantWritten {
			t.Errorf("%s: status written %t, want %t", s.name, written, s.wantWritten)
		}
	}
	if e.writes("create") != 1 {
		t.Errorf("%d creates, want 1", e.writes("create"))
	}
	if vc, _ := e.get(t, "pv-ds"); vc.Status.CachedObjects != 8 {
		t.Errorf("cachedObjects = %d after the changes, want 8", vc.Status.CachedObjects)
	}

	// A warmup of the whole volume tells its size: written at once.
	e.r.cfg.Dataset = func(h string) (Dataset, bool) { return Dataset{Bytes: 6 << 29, Objects: 16}, h == "bucket/ds" }
	before := e.writes("status")
	e.now = e.now.Add(time.Second)
	e.pass(t)
	if vc, _ := e.get(t, "pv-ds"); e.writes("status") != before+1 || vc.Status.CachedPercent == nil || *vc.Status.CachedPercent != 50 ||
		*vc.Status.DatasetBytes != 6<<29 || *vc.Status.DatasetObjects != 16 {
		t.Errorf("after a dataset size became known: %d status writes, status %+v", e.writes("status")-before, vc.Status)
	}

	e.usages = nil
	e.pass(t)
	if _, ok := e.get(t, "pv-ds"); ok || e.writes("delete") != 1 {
		t.Errorf("cache gone: object still there %t, %d deletes; want gone and 1", ok, e.writes("delete"))
	}
}

// TestReporterVolumes: one object per PersistentVolume of a handle; none
// for a cache without one; an object whose PersistentVolume went is
// deleted; other nodes' objects are left alone; nothing is written before
// the PersistentVolumes are listed.
func TestReporterVolumes(t *testing.T) {
	other := &basinv1.VolumeCache{
		ObjectMeta: metav1.ObjectMeta{Name: ObjectName("pv-1", "node-b"), Labels: map[string]string{basinv1.LabelNode: "node-b", basinv1.LabelVolume: "pv-1"}},
		Spec:       basinv1.VolumeCacheSpec{VolumeName: "pv-1", NodeName: "node-b"},
	}
	e := newReporterEnv(t, other)
	e.vols.synced = false
	e.vols.pvs["h1"] = []string{"pv-1", "pv-1-static"}
	e.usages = []cacheusage.Usage{{VolumeID: "h1", UsedBytes: 100, Objects: 1}, {VolumeID: "sanity-volume", UsedBytes: 5}}
	if err := e.r.pass(context.Background()); !errors.Is(err, errNotSynced) {
		t.Fatalf("pass before the listing: %v, want errNotSynced", err)
	}
	if e.writes("create") != 0 {
		t.Fatal("wrote before the PersistentVolumes were listed")
	}
	e.vols.synced = true
	e.pass(t)
	for _, pv := range []string{"pv-1", "pv-1-static"} {
		if _, ok := e.get(t, pv); !ok {
			t.Errorf("no VolumeCache for %s", pv)
		}
	}
	var list basinv1.VolumeCacheList
	if err := e.c.List(context.Background(), &list); err != nil || len(list.Items) != 3 {
		t.Fatalf("%d VolumeCaches (%v), want 3: two of this node, one of node-b", len(list.Items), err)
	}
	e.vols.pvs["h1"] = []string{"pv-1"}
	e.pass(t)
	if _, ok := e.get(t, "pv-1-static"); ok {
		t.Error("the VolumeCache of a deleted PersistentVolume is still there")
	}
	if err := e.c.Get(context.Background(), client.ObjectKeyFromObject(other), &basinv1.VolumeCache{}); err != nil {
		t.Errorf("node-b's VolumeCache: %v", err)
	}
}

// TestReporterSharedCache: a cache that read-only volumes share (its usage
// names the share) gives each member's PersistentVolume a VolumeCache
// with the share's bytes, naming the others that count the same bytes.
func TestReporterSharedCache(t *testing.T) {
	e := newReporterEnv(t)
	e.r.cfg.Members = func(id string) []string {
		if id == "share-1" {
			return []string{"h1", "h2"}
		}
		return nil
	}
	e.vols.pvs["h1"] = []string{"pv-a"}
	e.vols.pvs["h2"] = []string{"pv-b"}
	e.vols.pvs["h3"] = []string{"pv-c"}
	e.usages = []cacheusage.Usage{{VolumeID: "share-1", UsedBytes: 100, Objects: 2}, {VolumeID: "h3", UsedBytes: 7, Objects: 1}}
	e.pass(t)
	for pv, others := range map[string][]string{"pv-a": {"pv-b"}, "pv-b": {"pv-a"}, "pv-c": nil} {
		vc, ok := e.get(t, pv)
		if !ok {
			t.Errorf("no VolumeCache for %s", pv)
			continue
		}
		if want := map[string]int64{"pv-a": 100, "pv-b": 100, "pv-c": 7}[pv]; vc.Status.CachedBytes != want {
			t.Errorf("%s: cachedBytes %d, want %d", pv, vc.Status.CachedBytes, want)
		}
		if !slices.Equal(vc.Status.SharedWith, others) {
			t.Errorf("%s: sharedWith %v, want %v", pv, vc.Status.SharedWith, others)
		}
	}
}

// TestReporterRecovers: while the API server fails writes, passes fail
// (and the plugin goes on); the first pass after writes what is due.
func TestReporterRecovers(t *testing.T) {
	e := newReporterEnv(t)
	e.vols.pvs["h"] = []string{"pv"}
	e.usages = []cacheusage.Usage{{VolumeID: "h", UsedBytes: 1}}
	e.fail = errors.New("connection refused")
	if err := e.r.pass(context.Background()); err == nil {
		t.Fatal("pass succeeded while every write failed")
	}
	e.fail = nil
	e.pass(t)
	if vc, ok := e.get(t, "pv"); !ok || vc.Status.CachedBytes != 1 {
		t.Fatalf("after recovery: %+v %t", vc, ok)
	}
}

// TestScanCaches reads a real cache's published usage, and skips what
// is no cache.
func TestScanCaches(t *testing.T) {
	root := t.TempDir()
	if got, err := scanCaches(root + "/missing"); err != nil || len(got) != 0 {
		t.Fatalf("missing root: %v, %v", got, err)
	}
	c, err := cache.Open(context.Background(), root+"/vol", objstoretest.NewFake(), cache.Options{Spec: mountspec.Spec{CacheSize: 64 << 20}, VolumeID: "bucket/prefix"})
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	if err := mkdir(root + "/not-a-cache"); err != nil {
		t.Fatal(err)
	}
	got, err := scanCaches(root)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 || got[0].VolumeID != "bucket/prefix" || got[0].Capacity != 64<<20 {
		t.Errorf("scanCaches = %+v, want the one cache of bucket/prefix with its capacity", got)
	}
}

func mkdir(p string) error { return os.Mkdir(p, 0o700) }

package warmupctl

import (
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/tools/events"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	basinv1 "github.com/basin-csi/basin/pkg/api/v1alpha1"
)

// fixture is a fake API server with a bound Basin claim, two nodes (n2
// holding some of the volume) and a Warmup of one node.
type fixture struct {
	t   *testing.T
	c   client.Client
	r   *Reconciler
	ev  *events.FakeRecorder
	reg *prometheus.Registry
	key types.NamespacedName
}

func newFixture(t *testing.T, edit func(*basinv1.Warmup)) *fixture {
	t.Helper()
	s := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	if err := basinv1.AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	w := &basinv1.Warmup{
		ObjectMeta: metav1.ObjectMeta{Name: "w", Namespace: "ns", UID: "uid-w", Generation: 1},
		Spec:       basinv1.WarmupSpec{ClaimName: "data", Nodes: basinv1.WarmupNodes{Count: ptr.To[int32](1)}, Paths: []string{"train"}},
	}
	if edit != nil {
		edit(w)
	}
	objs := []client.Object{
		w,
		&corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Name: "data", Namespace: "ns"}, Spec: corev1.PersistentVolumeClaimSpec{VolumeName: "pv1"},
			Status: corev1.PersistentVolumeClaimStatus{Phase: corev1.ClaimBound}},
		&corev1.PersistentVolume{ObjectMeta: metav1.ObjectMeta{Name: "pv1"},
			Spec: corev1.PersistentVolumeSpec{PersistentVolumeSource: corev1.PersistentVolumeSource{CSI: &corev1.CSIPersistentVolumeSource{Driver: "basin.csi.dev", VolumeHandle: "h"}}}},
		ptr.To(node("n1", nil)), ptr.To(node("n2", nil)),
		&basinv1.VolumeCache{ObjectMeta: metav1.ObjectMeta{Name: "pv1-n2", Labels: map[string]string{basinv1.LabelVolume: "pv1"}},
			Spec: basinv1.VolumeCacheSpec{VolumeName: "pv1", NodeName: "n2"}, Status: basinv1.VolumeCacheStatus{CachedBytes: 10}},
	}
	c := fake.NewClientBuilder().WithScheme(s).WithObjects(objs...).WithStatusSubresource(&basinv1.Warmup{}, &corev1.Pod{}).Build()
	f := &fixture{t: t, c: c, ev: events.NewFakeRecorder(100), reg: prometheus.NewRegistry(), key: types.NamespacedName{Namespace: "ns", Name: "w"}}
	var err error
	f.r, err = newReconciler(c, c, f.ev, Options{DriverName: "basin.csi.dev", Image: "basin:test", Metrics: f.reg})
	if err != nil {
		t.Fatal(err)
	}
	return f
}

func (f *fixture) reconcile() ctrl.Result {
	f.t.Helper()
	res, err := f.r.Reconcile(f.t.Context(), ctrl.Request{NamespacedName: f.key})
	if err != nil {
		f.t.Fatalf("reconcile: %v", err)
	}
	return res
}

func (f *fixture) warmup() *basinv1.Warmup {
	f.t.Helper()
	var w basinv1.Warmup
	if err := f.c.Get(f.t.Context(), f.key, &w); err != nil {
		f.t.Fatal(err)
	}
	return &w
}

func (f *fixture) pods() []corev1.Pod {
	f.t.Helper()
	var list corev1.PodList
	if err := f.c.List(f.t.Context(), &list, client.InNamespace("ns")); err != nil {
		f.t.Fatal(err)
	}
	return list.Items
}

// end makes the pod end with a report.
func (f *fixture) end(p *corev1.Pod, phase corev1.PodPhase, report string) {
	f.t.Helper()
	p.Status = endedPod(phase, 0, report).Status
	if err := f.c.Status().Update(f.t.Context(), p); err != nil {
		f.t.Fatal(err)
	}
}

func (f *fixture) events() string {
	var all []string
	for {
		select {
		case e := <-f.ev.Events:
			all = append(all, e)
		default:
			return strings.Join(all, "\n")
		}
	}
}

// TestReconcileRun drives a run through its life: started, a pod on the
// warm node, its report folded, the pods deleted; a new spec.rerun starts
// run 2.
func TestReconcileRun(t *testing.T) {
	f := newFixture(t, nil)
	f.reconcile()
	if w := f.warmup(); w.Status.Runs != 1 || w.Status.Phase != basinv1.WarmupPending || w.Status.ObservedGeneration != 1 {
		t.Fatalf("after the first reconcile: %+v", w.Status)
	}
	f.reconcile()
	pods := f.pods()
	if len(pods) != 1 {
		t.Fatalf("%d pods, want 1", len(pods))
	}
	p := pods[0]
	if ann := p.Annotations[annotationNode]; ann != "n2" {
		t.Errorf("pod on %q, want the warm node n2", ann)
	}
	if !metav1.IsControlledBy(&p, f.warmup()) || p.Spec.Containers[0].Image != "basin:test" || !p.Spec.Volumes[0].PersistentVolumeClaim.ReadOnly {
		t.Errorf("pod: owner %v image %s", p.OwnerReferences, p.Spec.Containers[0].Image)
	}
	if sc := p.Spec.SecurityContext; sc == nil || !*sc.RunAsNonRoot {
		t.Error("pod may run as root")
	}
	f.end(&p, corev1.PodSucceeded, `{"files":3,"bytes":300,"bytesPerSecond":30,"errors":0,"fits":"Yes","verdict":"fits"}`)
	f.reconcile()
	w := f.warmup()
	s := w.Status
	if s.Phase != basinv1.WarmupComplete || s.Files != 3 || s.Bytes != 300 || s.NodesSummary != "1/1" || s.Fits != "Yes" || s.CompletionTime == nil {
		t.Errorf("after the pod ended: %+v", s)
	}
	if !meta.IsStatusConditionTrue(s.Conditions, basinv1.ConditionComplete) || !meta.IsStatusConditionTrue(s.Conditions, basinv1.ConditionFits) {
		t.Errorf("conditions %+v", s.Conditions)
	}
	if n := len(f.pods()); n != 0 {
		t.Errorf("%d pods after the run ended, want 0", n)
	}
	if got := testutil.ToFloat64(f.r.metrics.ended.WithLabelValues("complete")); got != 1 {
		t.Errorf("runs ended complete = %v, want 1", got)
	}
	if ev := f.events(); !strings.Contains(ev, "Started") || !strings.Contains(ev, "Completed") {
		t.Errorf("events:\n%s", ev)
	}
	if res := f.reconcile(); res.RequeueAfter != 0 || f.warmup().Status.Runs != 1 {
		t.Errorf("an ended run without schedule: requeue %v, runs %d", res, f.warmup().Status.Runs)
	}

	w.Spec.Rerun = "again"
	if err := f.c.Update(t.Context(), w); err != nil {
		t.Fatal(err)
	}
	f.reconcile()
	if w := f.warmup(); w.Status.Runs != 2 || w.Status.ObservedRerun != "again" || meta.IsStatusConditionTrue(w.Status.Conditions, basinv1.ConditionComplete) {
		t.Errorf("after the rerun: %+v", w.Status)
	}
	f.reconcile()
	if pods := f.pods(); len(pods) != 1 || pods[0].Labels[labelRun] != "2" {
		t.Errorf("run 2's pods: %v", pods)
	}
	if got := testutil.ToFloat64(f.r.metrics.started); got != 2 {
		t.Errorf("runs started = %v, want 2", got)
	}
}

// TestReconcileFailedNode: a pod that fails makes the run Failed.
func TestReconcileFailedNode(t *testing.T) {
	f := newFixture(t, func(w *basinv1.Warmup) { w.Spec.Nodes.Count = nil })
	f.reconcile()
	f.reconcile()
	pods := f.pods()
	if len(pods) != 2 {
		t.Fatalf("%d pods, want 2 (every node)", len(pods))
	}
	f.end(&pods[0], corev1.PodSucceeded, `{"files":1,"bytes":1,"fits":"Yes"}`)
	f.end(&pods[1], corev1.PodFailed, `{"files":0,"errors":2,"fits":"Unknown","verdict":"2 files could not be read"}`)
	f.reconcile()
	s := f.warmup().Status
	if s.Phase != basinv1.WarmupFailed || !meta.IsStatusConditionTrue(s.Conditions, basinv1.ConditionFailed) || s.NodesSummary != "1/2" {
		t.Errorf("status %+v", s)
	}
	if ev := f.events(); !strings.Contains(ev, "NodeFailed") {
		t.Errorf("no NodeFailed event:\n%s", ev)
	}
}

// TestReconcileSchedule: an invalid schedule is a condition and an event;
// a valid one sets nextScheduleTime.
func TestReconcileSchedule(t *testing.T) {
	f := newFixture(t, func(w *basinv1.Warmup) { w.Spec.Schedule = "every day" })
	f.reconcile()
	c := meta.FindStatusCondition(f.warmup().Status.Conditions, ConditionSchedule)
	if c == nil || c.Status != metav1.ConditionFalse || !strings.Contains(c.Message, `"every day"`) {
		t.Errorf("schedule condition %+v", c)
	}
	if ev := f.events(); !strings.Contains(ev, "InvalidSchedule") {
		t.Errorf("no InvalidSchedule event:\n%s", ev)
	}

	f = newFixture(t, func(w *basinv1.Warmup) { w.Spec.Schedule = "0 2 * * *" })
	f.reconcile()
	res := f.reconcile()
	w := f.warmup()
	if w.Status.NextScheduleTime == nil || w.Status.NextScheduleTime.UTC().Hour() != 2 || res.RequeueAfter == 0 {
		t.Errorf("next %v, requeue %v", w.Status.NextScheduleTime, res)
	}
}

// TestReconcileTargetShared: a Warmup with target shared loads the
// volume's shared cache tier through one node, and waits (no pod) while
// the volume has no sharedCache attribute.
func TestReconcileTargetShared(t *testing.T) {
	f := newFixture(t, func(w *basinv1.Warmup) {
		w.Spec.Target, w.Spec.Nodes.Count = basinv1.WarmupTargetShared, nil // every node, were it not shared
	})
	f.reconcile()
	f.reconcile()
	if n := len(f.pods()); n != 0 {
		t.Fatalf("%d pods for a volume without a shared cache tier, want 0", n)
	}
	c := meta.FindStatusCondition(f.warmup().Status.Conditions, basinv1.ConditionComplete)
	if c == nil || c.Reason != "Waiting" || !strings.Contains(c.Message, basinv1.SharedCacheAttribute) {
		t.Errorf("condition %+v; want Waiting, naming %s", c, basinv1.SharedCacheAttribute)
	}

	var pv corev1.PersistentVolume
	if err := f.c.Get(t.Context(), client.ObjectKey{Name: "pv1"}, &pv); err != nil {
		t.Fatal(err)
	}
	pv.Spec.CSI.VolumeAttributes = map[string]string{basinv1.SharedCacheAttribute: "http://tier:9000/basin-tier"}
	if err := f.c.Update(t.Context(), &pv); err != nil {
		t.Fatal(err)
	}
	f.reconcile()
	pods := f.pods()
	if len(pods) != 1 || pods[0].Annotations[annotationNode] != "n2" {
		t.Fatalf("pods %d (on %v); want one, on the warm node n2", len(pods), pods)
	}
}

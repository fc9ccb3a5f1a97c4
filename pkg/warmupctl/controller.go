package warmupctl

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	"k8s.io/klog/v2"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	basinv1 "github.com/basin-csi/basin/pkg/api/v1alpha1"
)

// ConditionSchedule is True when spec.schedule is valid (the message says
// when the next run starts), False when it is not (the message names it);
// absent without a schedule.
const ConditionSchedule = "Schedule"

// Polling periods: a running run is looked at every runningPoll (pods'
// ends also trigger a reconcile at once); a run without nodes or claim
// retries every waitingPoll.
const (
	runningPoll = 5 * time.Second
	waitingPoll = 30 * time.Second
)

// Options configure the controller.
type Options struct {
	// DriverName is the CSI driver of Basin volumes; claims of other
	// drivers are refused.
	DriverName string
	// Image is the warmup pods' image; "" takes the controller's own (its
	// pod PodNamespace/PodName, container "csi-driver").
	Image                 string
	PodNamespace, PodName string
	// Metrics receives the controller's metrics (nil: none).
	Metrics prometheus.Registerer
}

// Reconciler is the Warmup controller.
type Reconciler struct {
	// constant
	client  client.Client
	reader  client.Reader // the API server itself, for objects not watched
	events  events.EventRecorder
	opts    Options
	metrics *metrics
	now     func() time.Time

	mu    sync.Mutex // guards image, bases
	image podImage
	bases map[types.UID]progress // a running pod's first progress
}

// Setup registers the Warmup controller with mgr.
func Setup(mgr ctrl.Manager, opts Options) error {
	r, err := newReconciler(mgr.GetClient(), mgr.GetAPIReader(), mgr.GetEventRecorder("basin-warmup"), opts)
	if err != nil {
		return err
	}
	return ctrl.NewControllerManagedBy(mgr).
		Named("warmup").
		For(&basinv1.Warmup{}).
		Owns(&corev1.Pod{}).
		Complete(r)
}

// newReconciler is the controller on c (cached reads and writes) and
// reader (uncached reads).
func newReconciler(c client.Client, reader client.Reader, rec events.EventRecorder, opts Options) (*Reconciler, error) {
	m, err := newMetrics(opts.Metrics)
	if err != nil {
		return nil, fmt.Errorf("warmupctl: metrics: %w", err)
	}
	return &Reconciler{client: c, reader: reader, events: rec, opts: opts, metrics: m, now: time.Now, bases: map[types.UID]progress{}}, nil
}

// Reconcile moves one Warmup along: start a run when one is due, create
// its pods, fold what they report, end the run.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	res, err := r.reconcile(ctx, req)
	if err != nil && !apierrors.IsConflict(err) {
		// A conflict is a stale cache: the next reconcile sees the news.
		klog.ErrorS(err, "Warmup reconcile failed", "warmup", req.NamespacedName)
	}
	return res, err
}

func (r *Reconciler) reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	var w basinv1.Warmup
	if err := r.client.Get(ctx, req.NamespacedName, &w); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if !w.DeletionTimestamp.IsZero() {
		return ctrl.Result{}, nil // the pods go with it (owner references)
	}
	// klog's own logger: the orchestrator's manager may run without one.
	log := klog.LoggerWithValues(klog.Background(), "warmup", klog.KObj(&w), "claim", w.Spec.ClaimName)
	ctx = klog.NewContext(ctx, log)
	now := r.now()
	orig := w.Status.DeepCopy()
	s := &w.Status

	sched, schedErr := parseSchedule(w.Spec.Schedule)
	r.scheduleCondition(&w, schedErr)

	pods, err := r.pods(ctx, &w)
	if err != nil {
		return ctrl.Result{}, err
	}
	inRun := s.Runs > 0 && !ended(s.Phase)
	if why := r.runDue(&w, sched, now); why != "" {
		if inRun {
			r.events.Eventf(&w, nil, corev1.EventTypeNormal, "Restarted", "Restart", "run %d stopped: %s", s.Runs, why)
		}
		r.startRun(&w, now, why)
		if err := r.client.Status().Update(ctx, &w); err != nil {
			return ctrl.Result{}, err
		}
		r.metrics.started.Inc()
		r.events.Eventf(&w, nil, corev1.EventTypeNormal, "Started", "Start", "run %d started: %s", s.Runs, why)
		log.V(2).Info("Warmup run started", "run", s.Runs, "why", why)
		// The status update brings the next reconcile (which chooses the nodes).
		return ctrl.Result{}, r.deletePods(ctx, pods, -1)
	}

	var result ctrl.Result
	if inRun {
		result, err = r.advance(ctx, &w, pods, now)
		if err != nil {
			return ctrl.Result{}, err
		}
	}
	if sched != nil {
		if s.NextScheduleTime == nil || (!s.NextScheduleTime.After(now) && !inRun) {
			s.NextScheduleTime = &metav1.Time{Time: nextRun(sched, now)}
		}
		if wait := s.NextScheduleTime.Sub(now); wait > 0 && (result.RequeueAfter == 0 || wait < result.RequeueAfter) {
			result.RequeueAfter = wait
		}
	} else {
		s.NextScheduleTime = nil
	}
	if !equality.Semantic.DeepEqual(orig, s) {
		if err := r.client.Status().Update(ctx, &w); err != nil {
			return ctrl.Result{}, err
		}
	}
	if ended(s.Phase) {
		// Only once what the pods said is in the status.
		if orig.Phase != s.Phase {
			r.finished(ctx, &w)
		}
		return result, r.deletePods(ctx, pods, -1)
	}
	return result, r.deletePods(ctx, pods, s.Runs)
}

// runDue says why a new run starts now, or "" if none does.
func (r *Reconciler) runDue(w *basinv1.Warmup, sched interface{ Next(time.Time) time.Time }, now time.Time) string {
	s := &w.Status
	switch {
	case s.Runs == 0:
		return "new Warmup"
	case s.ObservedRerun != w.Spec.Rerun:
		return fmt.Sprintf("spec.rerun is %q", w.Spec.Rerun)
	case s.ObservedGeneration != w.Generation:
		return fmt.Sprintf("spec changed (generation %d)", w.Generation)
	case sched != nil && ended(s.Phase) && s.NextScheduleTime != nil && !s.NextScheduleTime.After(now):
		return fmt.Sprintf("scheduled (%s, %s)", w.Spec.Schedule, s.NextScheduleTime.UTC().Format(time.RFC3339))
	}
	return ""
}

// startRun resets the status for a new run; its nodes are chosen next.
func (r *Reconciler) startRun(w *basinv1.Warmup, now time.Time, why string) {
	s := &w.Status
	s.Runs++
	s.ObservedGeneration, s.ObservedRerun = w.Generation, w.Spec.Rerun
	s.StartTime, s.CompletionTime = &metav1.Time{Time: now}, nil
	s.Nodes = nil
	if s.NextScheduleTime != nil && !s.NextScheduleTime.After(now) {
		s.NextScheduleTime = nil // computed again from now
	}
	fold(s, w.Generation)
	meta.SetStatusCondition(&s.Conditions, metav1.Condition{Type: basinv1.ConditionComplete, Status: metav1.ConditionFalse,
		Reason: "Started", Message: fmt.Sprintf("run %d started: %s", s.Runs, why), ObservedGeneration: w.Generation})
}

// advance drives the current run: choose its nodes if not yet done,
// create missing pods, fold the pods' state into the status.
func (r *Reconciler) advance(ctx context.Context, w *basinv1.Warmup, pods []corev1.Pod, now time.Time) (ctrl.Result, error) {
	s := &w.Status
	if len(s.Nodes) == 0 {
		nodes, err := r.choose(ctx, w)
		if err != nil {
			msg := err.Error()
			if c := meta.FindStatusCondition(s.Conditions, basinv1.ConditionComplete); c == nil || c.Message != msg {
				r.events.Eventf(w, nil, corev1.EventTypeWarning, "NoNodes", "ChooseNodes", "run %d waits: %s", s.Runs, msg)
			}
			meta.SetStatusCondition(&s.Conditions, metav1.Condition{Type: basinv1.ConditionComplete, Status: metav1.ConditionFalse,
				Reason: "Waiting", Message: msg, ObservedGeneration: w.Generation})
			return ctrl.Result{RequeueAfter: waitingPoll}, nil
		}
		for _, n := range nodes {
			s.Nodes = append(s.Nodes, basinv1.WarmupNodeStatus{NodeName: n, Phase: basinv1.WarmupPending,
				PodName: podName(w, s.Runs, n), Fits: "Unknown"})
		}
	}
	img, err := r.podImage(ctx)
	if err != nil {
		return ctrl.Result{}, err
	}
	caches, err := r.caches(ctx, w)
	if err != nil {
		return ctrl.Result{}, err
	}
	byName := map[string]*corev1.Pod{}
	for i := range pods {
		byName[pods[i].Name] = &pods[i]
	}
	for i := range s.Nodes {
		n := &s.Nodes[i]
		pod := byName[n.PodName]
		if pod == nil && !ended(n.Phase) {
			p := warmupPod(w, s.Runs, n.NodeName, img)
			if err := r.client.Create(ctx, p); err != nil && !apierrors.IsAlreadyExists(err) {
				r.events.Eventf(w, nil, corev1.EventTypeWarning, "PodFailed", "CreatePod", "pod for node %s: %v", n.NodeName, err)
				return ctrl.Result{}, err
			}
			continue
		}
		var base *progress
		if pod != nil && pod.Status.Phase == corev1.PodRunning {
			base = r.base(pod, caches[n.NodeName], now)
		}
		next := nodeFromPod(*n, pod, caches[n.NodeName], base, now)
		if next.Phase == basinv1.WarmupFailed && n.Phase != basinv1.WarmupFailed {
			r.events.Eventf(w, nil, corev1.EventTypeWarning, "NodeFailed", "Warmup", "node %s: %s", n.NodeName, truncate(next.Message, 300))
		}
		*n = next
	}
	fold(s, w.Generation)
	if ended(s.Phase) {
		s.CompletionTime = &metav1.Time{Time: now}
		return ctrl.Result{}, nil
	}
	return ctrl.Result{RequeueAfter: runningPoll}, nil
}

// finished reports a run's end: event, metric, log.
func (r *Reconciler) finished(ctx context.Context, w *basinv1.Warmup) {
	s := &w.Status
	took := ""
	if s.StartTime != nil && s.CompletionTime != nil {
		took = s.CompletionTime.Sub(s.StartTime.Time).Round(time.Second).String()
	}
	if s.Phase == basinv1.WarmupComplete {
		r.metrics.ended.WithLabelValues("complete").Inc()
		r.events.Eventf(w, nil, corev1.EventTypeNormal, "Completed", "Warmup", "run %d loaded %d files (%s) on %s nodes in %s; fits: %s",
			s.Runs, s.Files, s.Size, s.NodesSummary, took, s.Fits)
	} else {
		r.metrics.ended.WithLabelValues("failed").Inc()
		r.events.Eventf(w, nil, corev1.EventTypeWarning, "Failed", "Warmup", "run %d failed: %s nodes loaded in %s", s.Runs, s.NodesSummary, took)
	}
	klog.FromContext(ctx).V(2).Info("Warmup run ended", "run", s.Runs, "phase", s.Phase, "nodes", s.NodesSummary, "bytes", s.Bytes, "took", took)
}

// base is the first progress seen of a running pod (its rate's start).
func (r *Reconciler) base(pod *corev1.Pod, cache *basinv1.VolumeCache, now time.Time) *progress {
	r.mu.Lock()
	defer r.mu.Unlock()
	b, ok := r.bases[pod.UID]
	if !ok {
		if cache != nil {
			b = progress{Bytes: cache.Status.CachedBytes, At: now}
		} else {
			b = progress{At: now}
		}
		r.bases[pod.UID] = b
	}
	return &b
}

// scheduleCondition sets the Schedule condition (and an event when the
// schedule turns invalid).
func (r *Reconciler) scheduleCondition(w *basinv1.Warmup, err error) {
	s := &w.Status
	switch {
	case w.Spec.Schedule == "":
		meta.RemoveStatusCondition(&s.Conditions, ConditionSchedule)
	case err != nil:
		if c := meta.FindStatusCondition(s.Conditions, ConditionSchedule); c == nil || c.Status != metav1.ConditionFalse || c.ObservedGeneration != w.Generation {
			r.events.Eventf(w, nil, corev1.EventTypeWarning, "InvalidSchedule", "Schedule", "%v", err)
		}
		meta.SetStatusCondition(&s.Conditions, metav1.Condition{Type: ConditionSchedule, Status: metav1.ConditionFalse,
			Reason: "InvalidSchedule", Message: err.Error(), ObservedGeneration: w.Generation})
	default:
		meta.SetStatusCondition(&s.Conditions, metav1.Condition{Type: ConditionSchedule, Status: metav1.ConditionTrue,
			Reason: "Valid", Message: fmt.Sprintf("runs on %q (UTC)", w.Spec.Schedule), ObservedGeneration: w.Generation})
	}
}

// choose picks the run's nodes (nodes.go) for the claim's volume.
func (r *Reconciler) choose(ctx context.Context, w *basinv1.Warmup) ([]string, error) {
	pv, err := r.volume(ctx, w)
	if err != nil {
		return nil, err
	}
	c := nodeChoice{Tolerations: w.Spec.Tolerations, Cached: map[string]int64{}}
	var nodes corev1.NodeList
	if err := r.client.List(ctx, &nodes); err != nil {
		return nil, err
	}
	c.Nodes = nodes.Items
	var caches basinv1.VolumeCacheList
	if err := r.client.List(ctx, &caches, client.MatchingLabels{basinv1.LabelVolume: pv}); err != nil && !meta.IsNoMatchError(err) {
		return nil, err
	}
	for _, vc := range caches.Items {
		c.Cached[vc.Spec.NodeName] = vc.Status.CachedBytes
	}
	spec := w.Spec.Nodes
	if w.Spec.Target == basinv1.WarmupTargetShared {
		var v corev1.PersistentVolume
		if err := r.reader.Get(ctx, client.ObjectKey{Name: pv}, &v); err != nil {
			return nil, err
		}
		if v.Spec.CSI.VolumeAttributes[basinv1.SharedCacheAttribute] == "" {
			return nil, fmt.Errorf("%w: target %s: volume %s has no %s attribute (no shared cache tier to load)",
				errNotReady, basinv1.WarmupTargetShared, pv, basinv1.SharedCacheAttribute)
		}
		spec.Count = ptr.To[int32](1) // one node reads it once into the tier
	}
	if name := spec.JobName; name != "" {
		var job batchv1.Job
		if err := r.reader.Get(ctx, client.ObjectKey{Namespace: w.Namespace, Name: name}, &job); err != nil {
			if apierrors.IsNotFound(err) {
				return nil, fmt.Errorf("job %s/%s not found", w.Namespace, name)
			}
			return nil, err
		}
		c.Job = &job
	}
	return chooseNodes(spec, c)
}

// errNotReady: the claim cannot be loaded yet (unbound) or at all (not a
// Basin volume); the message says which.
var errNotReady = errors.New("warmupctl: claim not ready")

// volume is the name of the claim's PersistentVolume, a Basin volume.
func (r *Reconciler) volume(ctx context.Context, w *basinv1.Warmup) (string, error) {
	var pvc corev1.PersistentVolumeClaim
	if err := r.reader.Get(ctx, client.ObjectKey{Namespace: w.Namespace, Name: w.Spec.ClaimName}, &pvc); err != nil {
		if apierrors.IsNotFound(err) {
			return "", fmt.Errorf("%w: claim %s/%s not found", errNotReady, w.Namespace, w.Spec.ClaimName)
		}
		return "", err
	}
	if pvc.Spec.VolumeName == "" || pvc.Status.Phase != corev1.ClaimBound {
		return "", fmt.Errorf("%w: claim %s/%s is not bound", errNotReady, w.Namespace, w.Spec.ClaimName)
	}
	var pv corev1.PersistentVolume
	if err := r.reader.Get(ctx, client.ObjectKey{Name: pvc.Spec.VolumeName}, &pv); err != nil {
		return "", err
	}
	if pv.Spec.CSI == nil || pv.Spec.CSI.Driver != r.opts.DriverName {
		return "", fmt.Errorf("%w: volume %s of claim %s/%s is not a %s volume", errNotReady, pv.Name, w.Namespace, w.Spec.ClaimName, r.opts.DriverName)
	}
	return pv.Name, nil
}

// caches are the VolumeCaches of the claim's volume, by node (none when
// the claim is gone or no node plugin reports).
func (r *Reconciler) caches(ctx context.Context, w *basinv1.Warmup) (map[string]*basinv1.VolumeCache, error) {
	out := map[string]*basinv1.VolumeCache{}
	pv, err := r.volume(ctx, w)
	if err != nil {
		return out, nil //nolint:nilerr // progress is optional; the pods report the end
	}
	var list basinv1.VolumeCacheList
	if err := r.client.List(ctx, &list, client.MatchingLabels{basinv1.LabelVolume: pv}); err != nil {
		if meta.IsNoMatchError(err) {
			return out, nil
		}
		return nil, err
	}
	for i := range list.Items {
		out[list.Items[i].Spec.NodeName] = &list.Items[i]
	}
	return out, nil
}

// pods are the pods w owns.
func (r *Reconciler) pods(ctx context.Context, w *basinv1.Warmup) ([]corev1.Pod, error) {
	var list corev1.PodList
	if err := r.client.List(ctx, &list, client.InNamespace(w.Namespace), client.MatchingLabels{labelWarmupUID: string(w.UID)}); err != nil {
		return nil, err
	}
	out := list.Items[:0]
	for _, p := range list.Items {
		if metav1.IsControlledBy(&p, w) {
			out = append(out, p)
		}
	}
	return out, nil
}

// deletePods deletes the pods not of run keep (-1: all).
func (r *Reconciler) deletePods(ctx context.Context, pods []corev1.Pod, keep int32) error {
	var errs []error
	for i := range pods {
		p := &pods[i]
		if p.Labels[labelRun] == strconv.Itoa(int(keep)) || !p.DeletionTimestamp.IsZero() {
			continue
		}
		if err := r.client.Delete(ctx, p, client.Preconditions{UID: &p.UID}); client.IgnoreNotFound(err) != nil {
			errs = append(errs, err)
		}
		r.mu.Lock()
		delete(r.bases, p.UID)
		r.mu.Unlock()
	}
	return errors.Join(errs...)
}

// podImage is the warmup pods' image: Options.Image, else the
// controller's own csi-driver container's (read once).
func (r *Reconciler) podImage(ctx context.Context) (podImage, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.image.Image != "" {
		return r.image, nil
	}
	if r.opts.Image != "" {
		r.image = podImage{Image: r.opts.Image, PullPolicy: corev1.PullIfNotPresent}
		return r.image, nil
	}
	if r.opts.PodName == "" || r.opts.PodNamespace == "" {
		return podImage{}, errors.New("warmupctl: no image for warmup pods: set --warmup-image, or POD_NAME and POD_NAMESPACE")
	}
	var self corev1.Pod
	if err := r.reader.Get(ctx, client.ObjectKey{Namespace: r.opts.PodNamespace, Name: r.opts.PodName}, &self); err != nil {
		return podImage{}, fmt.Errorf("warmupctl: the controller's own pod (for its image): %w", err)
	}
	for _, c := range self.Spec.Containers {
		if c.Name == "csi-driver" {
			r.image = podImage{Image: c.Image, PullPolicy: c.ImagePullPolicy}
			return r.image, nil
		}
	}
	return podImage{}, fmt.Errorf("warmupctl: pod %s/%s has no csi-driver container", r.opts.PodNamespace, r.opts.PodName)
}

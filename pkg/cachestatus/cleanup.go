package cachestatus

import (
	"context"
	"fmt"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/klog/v2"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	basinv1 "github.com/basin-csi/basin/pkg/api/v1alpha1"
)

// DefaultStaleAfter is how long a VolumeCache may go without a write
// before Cleanup takes its node plugin for dead: six refresh periods.
const DefaultStaleAfter = 6 * DefaultRefresh

// Reasons Cleanup deletes for (the reason label of its metric).
const (
	ReasonVolumeGone = "volume-gone"
	ReasonNodeGone   = "node-gone"
	ReasonStale      = "stale"
)

// CleanupOptions tune Cleanup.
type CleanupOptions struct {
	// StaleAfter: DefaultStaleAfter when 0.
	StaleAfter time.Duration
	// Metrics, when not nil, receives basin_volumecache_deleted_total.
	Metrics prometheus.Registerer
}

// Cleanup deletes the VolumeCache objects whose PersistentVolume or Node
// is gone (the Node's owner reference does the latter, but for objects
// written before the node plugin could read its Node), and those no node
// plugin refreshed for StaleAfter.
type Cleanup struct {
	// constant
	client     client.Client // the manager's, reading from its cache
	api        client.Reader // straight from the API server
	staleAfter time.Duration
	deleted    *prometheus.CounterVec
	now        func() time.Time
}

var (
	pvKind   = corev1.SchemeGroupVersion.WithKind("PersistentVolume")
	nodeKind = corev1.SchemeGroupVersion.WithKind("Node")
)

// NewCleanup returns the reconciler; SetupWithManager registers it.
func NewCleanup(c client.Client, api client.Reader, opts CleanupOptions) (*Cleanup, error) {
	if opts.StaleAfter <= 0 {
		opts.StaleAfter = DefaultStaleAfter
	}
	cl := &Cleanup{
		client: c, api: api, staleAfter: opts.StaleAfter, now: time.Now,
		deleted: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "basin_volumecache_deleted_total",
			Help: "VolumeCache objects the orchestrator deleted, by reason (volume-gone, node-gone, stale).",
		}, []string{"reason"}),
	}
	for _, r := range []string{ReasonVolumeGone, ReasonNodeGone, ReasonStale} {
		cl.deleted.WithLabelValues(r)
	}
	if opts.Metrics != nil {
		if err := opts.Metrics.Register(cl.deleted); err != nil {
			return nil, fmt.Errorf("cachestatus: %w", err)
		}
	}
	return cl, nil
}

// SetupCleanup registers Cleanup with mgr.
func SetupCleanup(mgr manager.Manager, opts CleanupOptions) error {
	cl, err := NewCleanup(mgr.GetClient(), mgr.GetAPIReader(), opts)
	if err != nil {
		return err
	}
	return cl.SetupWithManager(mgr)
}

// SetupWithManager watches VolumeCaches, and the deletions of
// PersistentVolumes and Nodes (their metadata only).
func (c *Cleanup) SetupWithManager(mgr manager.Manager) error {
	deletions := predicate.Funcs{
		CreateFunc:  func(event.CreateEvent) bool { return false },
		UpdateFunc:  func(event.UpdateEvent) bool { return false },
		DeleteFunc:  func(event.DeleteEvent) bool { return true },
		GenericFunc: func(event.GenericEvent) bool { return false },
	}
	return ctrl.NewControllerManagedBy(mgr).
		Named("volumecache-cleanup").
		For(&basinv1.VolumeCache{}).
		Watches(&corev1.PersistentVolume{}, handler.EnqueueRequestsFromMapFunc(c.byLabel(basinv1.LabelVolume)),
			builder.OnlyMetadata, builder.WithPredicates(deletions)).
		Watches(&corev1.Node{}, handler.EnqueueRequestsFromMapFunc(c.byLabel(basinv1.LabelNode)),
			builder.OnlyMetadata, builder.WithPredicates(deletions)).
		Complete(c)
}

// byLabel maps a deleted object to the VolumeCaches labelled with its
// name.
func (c *Cleanup) byLabel(label string) handler.MapFunc {
	return func(ctx context.Context, o client.Object) []reconcile.Request {
		var list basinv1.VolumeCacheList
		if err := c.client.List(ctx, &list, client.MatchingLabels{label: o.GetName()}); err != nil {
			klog.ErrorS(err, "Listing VolumeCaches failed", "label", label, "name", o.GetName())
			return nil
		}
		out := make([]reconcile.Request, len(list.Items))
		for i, vc := range list.Items {
			out[i] = reconcile.Request{NamespacedName: client.ObjectKeyFromObject(&vc)}
		}
		return out
	}
}

// Reconcile deletes the VolumeCache if it is orphaned or stale, and
// otherwise looks again when it would turn stale.
func (c *Cleanup) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	var vc basinv1.VolumeCache
	if err := c.client.Get(ctx, req.NamespacedName, &vc); err != nil {
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	if !vc.DeletionTimestamp.IsZero() {
		return reconcile.Result{}, nil
	}
	reason, err := c.orphaned(ctx, &vc)
	if err != nil {
		return reconcile.Result{}, err
	}
	if reason == "" {
		return reconcile.Result{RequeueAfter: lastWrite(&vc).Add(c.staleAfter).Sub(c.now()) + time.Second}, nil
	}
	if err := c.client.Delete(ctx, &vc, client.Preconditions{UID: &vc.UID}); err != nil {
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	c.deleted.WithLabelValues(reason).Inc()
	klog.InfoS("VolumeCache deleted", "volumeCache", vc.Name, "reason", reason, "pv", vc.Spec.VolumeName, "node", vc.Spec.NodeName)
	return reconcile.Result{}, nil
}

// orphaned says why vc must go, or "".
func (c *Cleanup) orphaned(ctx context.Context, vc *basinv1.VolumeCache) (string, error) {
	if gone, err := c.gone(ctx, pvKind, vc.Spec.VolumeName); err != nil || gone {
		return ReasonVolumeGone, err
	}
	if gone, err := c.gone(ctx, nodeKind, vc.Spec.NodeName); err != nil || gone {
		return ReasonNodeGone, err
	}
	if c.now().Sub(lastWrite(vc)) > c.staleAfter {
		return ReasonStale, nil
	}
	return "", nil
}

// gone reports whether the object of kind named name does not exist. The
// cache may lag the API server (a volume created a moment ago), so the
// API server confirms an absence.
func (c *Cleanup) gone(ctx context.Context, kind schema.GroupVersionKind, name string) (bool, error) {
	m := &metav1.PartialObjectMetadata{}
	m.SetGroupVersionKind(kind)
	key := client.ObjectKey{Name: name}
	err := c.client.Get(ctx, key, m)
	if err == nil || !apierrors.IsNotFound(err) {
		return false, err
	}
	err = c.api.Get(ctx, key, m)
	if apierrors.IsNotFound(err) {
		return true, nil
	}
	return false, err
}

// lastWrite is when vc's status was last written (its creation if never).
func lastWrite(vc *basinv1.VolumeCache) time.Time {
	if t := vc.Status.UpdateTime; !t.IsZero() {
		return t.Time
	}
	return vc.CreationTimestamp.Time
}

package cachestatus

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/basin-csi/basin/internal/cacheusage"
	basinv1 "github.com/basin-csi/basin/pkg/api/v1alpha1"
)

// Defaults of Config.
const (
	DefaultInterval   = 30 * time.Second
	DefaultRefresh    = 10 * time.Minute
	DefaultSettle     = 2 * time.Second
	DefaultMaxBackoff = 5 * time.Minute
)

// errNotSynced: the PersistentVolumes are not listed yet.
var errNotSynced = errors.New("cachestatus: PersistentVolumes not listed yet")

// Config tunes a Reporter.
type Config struct {
	// NodeName is this node's name (the Node object's).
	NodeName string
	// CacheRoot holds the volumes' cache directories.
	CacheRoot string
	// Interval is how often the caches are read (DefaultInterval).
	Interval time.Duration
	// Refresh is how old an unchanged status may grow before it is
	// written again (DefaultRefresh): the update time shows the node
	// plugin alive.
	Refresh time.Duration
	// Settle is the delay between a Trigger and the pass it causes
	// (DefaultSettle): a staged volume's cache publishes its usage at its
	// first flush.
	Settle time.Duration
	// MaxBackoff bounds the wait after failed passes (DefaultMaxBackoff).
	MaxBackoff time.Duration
	// Dataset, when not nil, returns the size of the whole volume of a
	// handle where the node knows it (after a warmup of all of it).
	Dataset func(handle string) (Dataset, bool)
	// Members, when not nil, returns the volume handles a cache serves
	// when it is not that of one volume (the cache's usage names a FUSE
	// process that several read-only volumes share); none: the cache is
	// its own volume's.
	Members func(cacheVolumeID string) []string
}

func (c Config) withDefaults() (Config, error) {
	if c.NodeName == "" || c.CacheRoot == "" {
		return c, errors.New("cachestatus: node name and cache root are required")
	}
	for _, d := range []struct {
		p   *time.Duration
		def time.Duration
	}{{&c.Interval, DefaultInterval}, {&c.Refresh, DefaultRefresh}, {&c.Settle, DefaultSettle}, {&c.MaxBackoff, DefaultMaxBackoff}} {
		if *d.p <= 0 {
			*d.p = d.def
		}
	}
	return c, nil
}

// NewScheme returns the scheme the Reporter's client needs: Nodes and
// Basin's types.
func NewScheme() (*runtime.Scheme, error) {
	s := runtime.NewScheme()
	if err := corev1.AddToScheme(s); err != nil {
		return nil, err
	}
	if err := basinv1.AddToScheme(s); err != nil {
		return nil, err
	}
	return s, nil
}

// Reporter keeps this node's VolumeCache objects current (see the
// package documentation).
type Reporter struct {
	// constant
	cfg     Config
	c       client.Client
	volumes Volumes
	scan    func() ([]cacheusage.Usage, error) // the caches' usage (scanCaches)
	now     func() time.Time
	trigger chan struct{}
	writes  *prometheus.CounterVec
	fails   prometheus.Counter

	// owned by the goroutine that runs passes
	known   map[string]*basinv1.VolumeCache // this node's objects as last read or written; nil until listed
	nodeUID types.UID                       // "" until the Node was read
}

// NewReporter returns a reporter writing with c (Nodes and VolumeCaches:
// NewScheme) and naming volumes with volumes.
func NewReporter(c client.Client, volumes Volumes, cfg Config) (*Reporter, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	return &Reporter{
		cfg: cfg, c: c, volumes: volumes, now: time.Now, trigger: make(chan struct{}, 1),
		scan: func() ([]cacheusage.Usage, error) { return scanCaches(cfg.CacheRoot) },
		writes: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "basin_cachestatus_writes_total",
			Help: "Writes of this node's VolumeCache objects to the API server, by operation (create, status, delete).",
		}, []string{"op"}),
		fails: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "basin_cachestatus_failed_passes_total",
			Help: "Cache status passes that failed (API server unreachable, RBAC missing...), retried with backoff.",
		}),
	}, nil
}

// Collectors are the reporter's metrics.
func (r *Reporter) Collectors() []prometheus.Collector {
	return []prometheus.Collector{r.writes, r.fails}
}

// Trigger asks for a pass soon (after Config.Settle). It never blocks.
func (r *Reporter) Trigger() {
	select {
	case r.trigger <- struct{}{}:
	default:
	}
}

// Run makes a pass every interval, and soon after a Trigger, until ctx
// ends. After a failed pass it waits longer, up to MaxBackoff.
func (r *Reporter) Run(ctx context.Context) {
	timer := time.NewTimer(r.cfg.Settle)
	defer timer.Stop()
	failures := 0
	for {
		select {
		case <-ctx.Done():
			return
		case <-r.trigger:
			if failures == 0 {
				timer.Reset(r.cfg.Settle)
			}
			continue
		case <-timer.C:
		}
		pctx, cancel := context.WithTimeout(ctx, max(r.cfg.Interval, 30*time.Second))
		err := r.pass(pctx)
		cancel()
		wait := r.cfg.Interval
		if err != nil && ctx.Err() == nil {
			failures++
			r.fails.Inc()
			wait = min(r.cfg.Interval<<min(failures-1, 16), r.cfg.MaxBackoff)
			klog.ErrorS(err, "Reporting the cache status failed", "node", r.cfg.NodeName, "retryIn", wait)
		} else {
			failures = 0
		}
		timer.Reset(wait)
	}
}

// wanted is one VolumeCache as this pass wants it.
type wanted struct {
	pv, handle string
	status     basinv1.VolumeCacheStatus
}

// pass reads the caches and writes what changed.
func (r *Reporter) pass(ctx context.Context) error {
	if !r.volumes.Synced() {
		return errNotSynced
	}
	if r.known == nil {
		var list basinv1.VolumeCacheList
		if err := r.c.List(ctx, &list, client.MatchingLabels{basinv1.LabelNode: r.cfg.NodeName}); err != nil {
			return fmt.Errorf("cachestatus: list this node's VolumeCaches: %w", err)
		}
		r.known = make(map[string]*basinv1.VolumeCache, len(list.Items))
		for i := range list.Items {
			r.known[list.Items[i].Name] = &list.Items[i]
		}
	}
	usages, err := r.scan()
	if err != nil {
		return err
	}
	now := r.now()
	want := map[string]wanted{}
	for _, u := range usages {
		handles := []string{u.VolumeID}
		if r.cfg.Members != nil {
			if m := r.cfg.Members(u.VolumeID); len(m) > 0 {
				handles = m
			}
		}
		var pvs []wanted // of this cache
		for _, h := range handles {
			var ds *Dataset
			if r.cfg.Dataset != nil {
				if d, ok := r.cfg.Dataset(h); ok {
					ds = &d
				}
			}
			for _, pv := range r.volumes.PersistentVolumes(h) {
				pvs = append(pvs, wanted{pv: pv, handle: h, status: statusOf(u, ds, now)})
			}
		}
		for i, w := range pvs {
			if len(pvs) > 1 {
				for j, o := range pvs {
					if j != i {
						w.status.SharedWith = append(w.status.SharedWith, o.pv)
					}
				}
				slices.Sort(w.status.SharedWith)
			}
			want[ObjectName(w.pv, r.cfg.NodeName)] = w
		}
	}
	if r.nodeUID == "" {
		r.lookupNode(ctx)
	}
	var errs []error
	names := make([]string, 0, len(want))
	for name := range want {
		names = append(names, name)
	}
	slices.Sort(names)
	for _, name := range names {
		if err := r.write(ctx, name, want[name]); err != nil {
			errs = append(errs, err)
		}
	}
	for name, have := range r.known {
		if _, ok := want[name]; ok {
			continue
		}
		err := r.c.Delete(ctx, have, client.Preconditions{UID: &have.UID})
		switch {
		case err == nil:
			r.writes.WithLabelValues("delete").Inc()
			klog.V(2).InfoS("VolumeCache deleted: its cache or PersistentVolume is gone", "volumeCache", name)
			fallthrough
		case apierrors.IsNotFound(err) || apierrors.IsConflict(err):
			delete(r.known, name)
		default:
			errs = append(errs, fmt.Errorf("cachestatus: delete VolumeCache %s: %w", name, err))
		}
	}
	return errors.Join(errs...)
}

// write creates the object if it is new, and writes its status if it
// changed or is Refresh old.
func (r *Reporter) write(ctx context.Context, name string, w wanted) error {
	have := r.known[name]
	if have == nil {
		obj := r.newObject(name, w)
		err := r.c.Create(ctx, obj)
		switch {
		case err == nil:
			r.writes.WithLabelValues("create").Inc()
			klog.V(2).InfoS("VolumeCache created", "volumeCache", name, "pv", w.pv)
		case apierrors.IsAlreadyExists(err):
			// Written by an earlier run of the plugin without the node
			// label, or a race with the listing: take it as it is.
			if err := r.c.Get(ctx, client.ObjectKey{Name: name}, obj); err != nil {
				return fmt.Errorf("cachestatus: read VolumeCache %s: %w", name, err)
			}
		default:
			return fmt.Errorf("cachestatus: create VolumeCache %s: %w", name, err)
		}
		have = obj
		r.known[name] = have
	}
	if !needsWrite(have.Status, w.status, r.cfg.Refresh) {
		return nil
	}
	obj := have.DeepCopy()
	obj.Status = w.status
	err := r.c.Status().Update(ctx, obj)
	switch {
	case err == nil:
		r.writes.WithLabelValues("status").Inc()
		r.known[name] = obj
		return nil
	case apierrors.IsNotFound(err) || apierrors.IsConflict(err):
		// Deleted or changed meanwhile: the next pass reads it afresh.
		delete(r.known, name)
		if apierrors.IsConflict(err) {
			r.known = nil
		}
		return fmt.Errorf("cachestatus: write the status of VolumeCache %s: %w", name, err)
	default:
		return fmt.Errorf("cachestatus: write the status of VolumeCache %s: %w", name, err)
	}
}

// newObject is a new VolumeCache, owned by the Node if its UID is known
// (the orchestrator's Cleanup removes those left without an owner).
func (r *Reporter) newObject(name string, w wanted) *basinv1.VolumeCache {
	obj := &basinv1.VolumeCache{
		ObjectMeta: metav1.ObjectMeta{
			Name:   name,
			Labels: map[string]string{basinv1.LabelVolume: w.pv, basinv1.LabelNode: r.cfg.NodeName},
		},
		// No status: the API server drops it from a create (the status
		// subresource); write comes back to it.
		Spec: basinv1.VolumeCacheSpec{VolumeName: w.pv, VolumeHandle: w.handle, NodeName: r.cfg.NodeName},
	}
	if r.nodeUID != "" {
		obj.OwnerReferences = []metav1.OwnerReference{{
			APIVersion: "v1", Kind: "Node", Name: r.cfg.NodeName, UID: r.nodeUID,
		}}
	}
	return obj
}

// lookupNode reads the Node's UID for the owner references.
func (r *Reporter) lookupNode(ctx context.Context) {
	var node corev1.Node
	if err := r.c.Get(ctx, client.ObjectKey{Name: r.cfg.NodeName}, &node); err != nil {
		klog.InfoS("Cannot read this node's Node object: VolumeCaches are created without an owner", "node", r.cfg.NodeName, "err", err)
		return
	}
	r.nodeUID = node.UID
}

// scanCaches reads the published usage of every cache directory under
// root, without opening or locking any. A directory whose cache has not
// published its usage yet (staged a moment ago) is skipped.
func scanCaches(root string) ([]cacheusage.Usage, error) {
	ents, err := os.ReadDir(root)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("cachestatus: read the cache root: %w", err)
	}
	var out []cacheusage.Usage
	for _, e := range ents {
		if !e.IsDir() {
			continue
		}
		dir := filepath.Join(root, e.Name())
		u, err := cacheusage.Read(dir)
		if err != nil || u.VolumeID == "" {
			klog.V(4).InfoS("Cache without a published usage skipped", "dir", dir, "err", err)
			continue
		}
		out = append(out, u)
	}
	return out, nil
}

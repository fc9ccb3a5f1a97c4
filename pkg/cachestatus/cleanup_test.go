package cachestatus

import (
	"context"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	basinv1 "github.com/basin-csi/basin/pkg/api/v1alpha1"
)

// TestCleanup deletes the VolumeCaches whose PersistentVolume or Node is
// gone or that nobody refreshed, counts them by reason, and requeues the
// others for when they would turn stale.
func TestCleanup(t *testing.T) {
	now := time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC)
	vc := func(pv, node string, updated time.Time) *basinv1.VolumeCache {
		return &basinv1.VolumeCache{
			ObjectMeta: metav1.ObjectMeta{Name: ObjectName(pv, node), CreationTimestamp: metav1.NewTime(now.Add(-2 * DefaultStaleAfter))},
			Spec:       basinv1.VolumeCacheSpec{VolumeName: pv, NodeName: node},
			Status:     basinv1.VolumeCacheStatus{UpdateTime: metav1.NewTime(updated)},
		}
	}
	tests := []struct {
		name    string
		obj     *basinv1.VolumeCache
		reason  string // "" when kept
		requeue time.Duration
	}{
		{"current", vc("pv", "node", now.Add(-time.Minute)), "", DefaultStaleAfter - time.Minute + time.Second},
		{"volume gone", vc("pv-gone", "node", now), ReasonVolumeGone, 0},
		{"node gone", vc("pv", "node-gone", now), ReasonNodeGone, 0},
		{"stale", vc("pv", "node", now.Add(-DefaultStaleAfter-time.Second)), ReasonStale, 0},
		{"never written, created long ago", vc("pv", "node", time.Time{}), ReasonStale, 0},
	}
	s, err := NewScheme()
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := fake.NewClientBuilder().WithScheme(s).WithObjects(
				&corev1.PersistentVolume{ObjectMeta: metav1.ObjectMeta{Name: "pv"}},
				&corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node"}},
				tt.obj,
			).Build()
			reg := prometheus.NewRegistry()
			cl, err := NewCleanup(c, c, CleanupOptions{Metrics: reg})
			if err != nil {
				t.Fatal(err)
			}
			cl.now = func() time.Time { return now }
			res, err := cl.Reconcile(context.Background(), reconcile.Request{NamespacedName: client.ObjectKeyFromObject(tt.obj)})
			if err != nil {
				t.Fatal(err)
			}
			err = c.Get(context.Background(), client.ObjectKeyFromObject(tt.obj), &basinv1.VolumeCache{})
			if kept := err == nil; kept != (tt.reason == "") {
				t.Errorf("kept %t, want %t (reason %q)", kept, tt.reason == "", tt.reason)
			}
			if res.RequeueAfter != tt.requeue {
				t.Errorf("requeue after %v, want %v", res.RequeueAfter, tt.requeue)
			}
			for _, r := range []string{ReasonVolumeGone, ReasonNodeGone, ReasonStale} {
				var m dto.Metric
				if err := cl.deleted.WithLabelValues(r).Write(&m); err != nil {
					t.Fatal(err)
				}
				want := 0.0
				if r == tt.reason {
					want = 1
				}
				if got := m.GetCounter().GetValue(); got != want {
					t.Errorf("basin_volumecache_deleted_total{reason=%q} = %v, want %v", r, got, want)
				}
			}
			if _, err := reg.Gather(); err != nil {
				t.Errorf("gather: %v", err)
			}
		})
	}
}

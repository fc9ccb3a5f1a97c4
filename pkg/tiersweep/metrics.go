package tiersweep

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/basin-csi/basin/pkg/cache/tier"
)

// Metrics are the controller's metrics of the shared cache tiers
// it keeps within their bounds (this package), labelled with the tier's
// sharedCache URL (no secret in it). A nil *Metrics records
// nothing.
type Metrics struct {
	// constant
	bytes, objects        *prometheus.GaugeVec
	evicted, evictedBytes *prometheus.CounterVec
	passes                *prometheus.CounterVec
	lastSuccess           *prometheus.GaugeVec
}

// Reasons an object is evicted (the reason label).
const (
	EvictedAge    = "age"
	EvictedBudget = "budget"
)

// NewMetrics creates the metrics and registers them with reg.
func NewMetrics(reg prometheus.Registerer) (*Metrics, error) {
	labels := []string{"tier"}
	m := &Metrics{
		bytes: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "basin_controller_tier_bytes",
			Help: "Bytes of the shared cache tier's objects after the controller's last pass over it.",
		}, labels),
		objects: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "basin_controller_tier_objects",
			Help: "Objects in the shared cache tier after the controller's last pass over it.",
		}, labels),
		evicted: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "basin_controller_tier_evicted_objects_total",
			Help: "Shared cache tier objects the controller deleted: unused for longer than sharedCacheMaxAge (reason=age) or least recently used beyond sharedCacheSize (reason=budget).",
		}, []string{"tier", "reason"}),
		evictedBytes: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "basin_controller_tier_evicted_bytes_total",
			Help: "Bytes of the shared cache tier objects the controller deleted.",
		}, labels),
		passes: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "basin_controller_tier_passes_total",
			Help: "The controller's passes over a shared cache tier, by result (ok or error; a failed pass is tried again at the next interval).",
		}, []string{"tier", "result"}),
		lastSuccess: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "basin_controller_tier_last_success_timestamp_seconds",
			Help: "When the controller's last successful pass over the shared cache tier ended (Unix time).",
		}, labels),
	}
	for _, c := range []prometheus.Collector{m.bytes, m.objects, m.evicted, m.evictedBytes, m.passes, m.lastSuccess} {
		if err := reg.Register(c); err != nil {
			return nil, err
		}
	}
	return m, nil
}

// Pass records a pass over the tier named name that ended at unix
// seconds: what it found and deleted (r), and whether it failed. The
// gauges are set only by a pass that listed the whole tier.
func (m *Metrics) Pass(name string, r tier.EvictResult, err error, unix float64) {
	if m == nil {
		return
	}
	m.evicted.WithLabelValues(name, EvictedAge).Add(float64(r.Expired))
	m.evicted.WithLabelValues(name, EvictedBudget).Add(float64(r.OverBudget))
	m.evictedBytes.WithLabelValues(name).Add(float64(r.EvictedBytes))
	if r.Listed {
		m.bytes.WithLabelValues(name).Set(float64(r.Bytes))
		m.objects.WithLabelValues(name).Set(float64(r.Objects))
	}
	if err != nil {
		m.passes.WithLabelValues(name, "error").Inc()
		return
	}
	m.passes.WithLabelValues(name, "ok").Inc()
	m.lastSuccess.WithLabelValues(name).Set(unix)
}

// Forget drops the gauges of a tier no volume names any more.
func (m *Metrics) Forget(name string) {
	if m == nil {
		return
	}
	for _, g := range []*prometheus.GaugeVec{m.bytes, m.objects, m.lastSuccess} {
		g.DeleteLabelValues(name)
	}
}

package placement

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// Metrics are the webhook's own metrics (controller-runtime adds its
// per-path request metrics to its registry).
type Metrics struct {
	decisions    *prometheus.CounterVec
	latency      prometheus.Histogram
	failures     *prometheus.CounterVec
	certNotAfter prometheus.Gauge
}

// NewMetrics registers the metrics with reg.
func NewMetrics(reg prometheus.Registerer) (*Metrics, error) {
	m := &Metrics{
		decisions: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "basin_placement_decisions_total",
			Help: "Pods the placement webhook admitted, by outcome (preferred, no_volume, opted_out, unbound, not_cached, error, ignored).",
		}, []string{"outcome"}),
		latency: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "basin_placement_webhook_duration_seconds",
			Help:    "Time the placement webhook took to decide on a pod.",
			Buckets: []float64{.0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5},
		}),
		failures: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "basin_placement_failures_total",
			Help: "Failures of the placement webhook (decode, read, encode: the pod was admitted without a preference; tls: the certificate could not be made, stored or published).",
		}, []string{"stage"}),
		certNotAfter: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "basin_placement_certificate_expiry_timestamp_seconds",
			Help: "When the serving certificate the webhook presents expires (Unix time).",
		}),
	}
	for _, c := range []prometheus.Collector{m.decisions, m.latency, m.failures, m.certNotAfter} {
		if err := reg.Register(c); err != nil {
			return nil, err
		}
	}
	return m, nil
}

func (m *Metrics) observe(outcome string, start time.Time) {
	if m == nil {
		return
	}
	m.decisions.WithLabelValues(outcome).Inc()
	m.latency.Observe(time.Since(start).Seconds())
}

func (m *Metrics) fail(stage string) {
	if m != nil {
		m.failures.WithLabelValues(stage).Inc()
	}
}

func (m *Metrics) serving(notAfter time.Time) {
	if m != nil {
		m.certNotAfter.Set(float64(notAfter.Unix()))
	}
}

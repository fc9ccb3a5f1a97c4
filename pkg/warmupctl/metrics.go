package warmupctl

import (
	"github.com/prometheus/client_golang/prometheus"
)

// metrics are the controller's own; controller-runtime counts reconciles,
// their errors and latency (controller="warmup") in its registry.
type metrics struct {
	started prometheus.Counter
	ended   *prometheus.CounterVec
}

func newMetrics(reg prometheus.Registerer) (*metrics, error) {
	m := &metrics{
		started: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "basin_warmup_runs_started_total",
			Help: "Warmup runs started (a new Warmup, a spec change, a new spec.rerun, spec.schedule).",
		}),
		ended: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "basin_warmup_runs_ended_total",
			Help: "Warmup runs ended, by outcome (complete: every node loaded; failed: a node failed).",
		}, []string{"outcome"}),
	}
	m.ended.WithLabelValues("complete")
	m.ended.WithLabelValues("failed")
	if reg == nil {
		return m, nil
	}
	for _, c := range []prometheus.Collector{m.started, m.ended} {
		if err := reg.Register(c); err != nil {
			return nil, err
		}
	}
	return m, nil
}

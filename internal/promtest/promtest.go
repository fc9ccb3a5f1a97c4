// Package promtest reads single values out of a Prometheus gatherer, for
// tests that assert what a registry exports.
//
// Contract: Value finds the first series of a family whose labels include
// the ones asked for (others may be present) and returns a counter's or a
// gauge's value, or a histogram's sample count; ok is false when there is
// none. A failed Gather fails the test.
package promtest

import (
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
)

// Value returns the value of the series of family name whose labels
// include want, and whether there is one.
func Value(t testing.TB, g prometheus.Gatherer, name string, want map[string]string) (float64, bool) {
	t.Helper()
	mfs, err := g.Gather()
	if err != nil {
		t.Fatalf("gather: %v", err)
	}
	return Find(mfs, name, want)
}

// Find is Value over families already gathered.
func Find(mfs []*dto.MetricFamily, name string, want map[string]string) (float64, bool) {
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
		for _, m := range mf.GetMetric() {
			if !hasLabels(m, want) {
				continue
			}
			switch {
			case m.Counter != nil:
				return m.Counter.GetValue(), true
			case m.Gauge != nil:
				return m.Gauge.GetValue(), true
			case m.Histogram != nil:
				return float64(m.Histogram.GetSampleCount()), true
			}
		}
	}
	return 0, false
}

// hasLabels reports whether m has every label of want with its value.
func hasLabels(m *dto.Metric, want map[string]string) bool {
	n := 0
	for _, l := range m.GetLabel() {
		if v, ok := want[l.GetName()]; ok && v == l.GetValue() {
			n++
		}
	}
	return n == len(want)
}

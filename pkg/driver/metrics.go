package driver

import (
	"context"
	"errors"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"google.golang.org/grpc"
	"google.golang.org/grpc/status"
	"k8s.io/klog/v2"
)

// callMetrics count and time the CSI calls a plugin serves: for the
// controller, CreateVolume and DeleteVolume outcomes are its provisioning
// counts and errors.
type callMetrics struct {
	// constant
	calls    *prometheus.CounterVec
	duration *prometheus.HistogramVec
}

// newCallMetrics registers the call metrics with reg; metrics already
// registered there (a second Serve of the same Driver) are reused.
func newCallMetrics(reg prometheus.Registerer) (*callMetrics, error) {
	m := &callMetrics{
		calls: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "basin_csi_operations_total",
			Help: "CSI calls served, by method (CreateVolume, NodeStageVolume, ...) and gRPC code (OK, InvalidArgument, ...).",
		}, []string{"method", "code"}),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "basin_csi_operation_duration_seconds",
			Help:    "Time to serve a CSI call, by method.",
			Buckets: prometheus.ExponentialBuckets(0.001, 3, 12),
		}, []string{"method"}),
	}
	var err error
	if m.calls, err = register(reg, m.calls); err != nil {
		return nil, err
	}
	if m.duration, err = register(reg, m.duration); err != nil {
		return nil, err
	}
	return m, nil
}

// register registers c, or returns the collector already registered in
// its place.
func register[C prometheus.Collector](reg prometheus.Registerer, c C) (C, error) {
	err := reg.Register(c)
	var are prometheus.AlreadyRegisteredError
	if errors.As(err, &are) {
		if old, ok := are.ExistingCollector.(C); ok {
			return old, nil
		}
	}
	return c, err
}

// intercept is the unary interceptor recording each call.
func (m *callMetrics) intercept(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
	start := time.Now()
	resp, err := handler(ctx, req)
	method := info.FullMethod[strings.LastIndexByte(info.FullMethod, '/')+1:]
	m.calls.WithLabelValues(method, status.Code(err).String()).Inc()
	m.duration.WithLabelValues(method).Observe(time.Since(start).Seconds())
	return resp, err
}

// interceptors are the unary interceptors of the gRPC server: logging,
// and the call metrics when Config.Metrics is set.
func (d *Driver) interceptors() []grpc.UnaryServerInterceptor {
	out := []grpc.UnaryServerInterceptor{logCalls}
	if d.cfg.Metrics == nil {
		return out
	}
	m, err := newCallMetrics(d.cfg.Metrics)
	if err != nil {
		klog.ErrorS(err, "CSI call metrics unavailable")
		return out
	}
	return append(out, m.intercept)
}

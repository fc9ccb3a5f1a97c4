package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"net"
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"k8s.io/klog/v2"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/basin-csi/basin/pkg/driver"
	"github.com/basin-csi/basin/pkg/metrics"
	"github.com/basin-csi/basin/pkg/orchestrator"
)

// The plugins' /metrics endpoint (off unless --metrics-address is given;
// the manifests use :9810 next to the sidecars' 9808 and 9809).

// metricsAddressFlag declares --metrics-address into p.
func metricsAddressFlag(fs *flag.FlagSet, p *string) {
	fs.StringVar(p, "metrics-address", "", "serve Prometheus metrics at http://`ADDRESS`/metrics (host:port, e.g. :9810); empty: no metrics")
}

// pluginRegistry is the registry of a plugin process: Go and process
// metrics and basin_build_info.
func pluginRegistry() *prometheus.Registry {
	reg := prometheus.NewRegistry()
	reg.MustRegister(
		collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name:        "basin_build_info",
			Help:        "Always 1; the version label is the running Basin version.",
			ConstLabels: prometheus.Labels{"version": version},
		}, func() float64 { return 1 }),
	)
	return reg
}

// startControllerMetrics serves the controller's metrics (its CSI calls:
// provisioning counts and errors) at addr, setting dc.Metrics. addr ""
// serves nothing. stop ends serving.
func startControllerMetrics(ctx context.Context, addr string, dc *driver.Config, oc *orchestrator.Config) (stop func(), err error) {
	if addr == "" {
		return func() {}, nil
	}
	reg := pluginRegistry()
	dc.Metrics = reg
	oc.Metrics = reg
	// controller-runtime keeps its reconcile and webhook metrics in its
	// own registry; serve both.
	_, stop, err = serveMetrics(ctx, addr, prometheus.Gatherers{reg, ctrlmetrics.Registry})
	return stop, err
}

// startNodeMetrics serves the node plugin's metrics at addr, setting
// dc.Metrics: its CSI calls, its heals and volumes, and every staged
// volume's FUSE process metrics (scraped from its admin socket, labelled
// with the volume), and extra. addr "" serves nothing.
func startNodeMetrics(ctx context.Context, addr string, dc *driver.Config, node *driver.Node, extra ...prometheus.Collector) (stop func(), err error) {
	if addr == "" {
		return func() {}, nil
	}
	reg := pluginRegistry()
	dc.Metrics = reg
	if err := registerAll(reg, extra); err != nil {
		return nil, err
	}
	g, err := metrics.NewNodeGatherer(reg, nodeSource{node}, metrics.NodeOptions{})
	if err != nil {
		return nil, err
	}
	_, stop, err = serveMetrics(ctx, addr, g)
	return stop, err
}

// registerAll registers every collector with reg.
func registerAll(reg prometheus.Registerer, cs []prometheus.Collector) error {
	for _, c := range cs {
		if err := reg.Register(c); err != nil {
			return fmt.Errorf("metrics: %w", err)
		}
	}
	return nil
}

// nodeSource adapts the node service to metrics.NodeSource.
type nodeSource struct{ n *driver.Node }

func (s nodeSource) Heals() int64 { return s.n.Heals() }

func (s nodeSource) Volumes(ctx context.Context) []metrics.NodeVolume {
	staged := s.n.StagedVolumes(ctx)
	out := make([]metrics.NodeVolume, len(staged))
	for i, v := range staged {
		out[i] = metrics.NodeVolume{VolumeID: v.ID, CacheDir: v.CacheDir, Served: v.Served, Healthy: v.Healthy, Heals: v.Heals}
	}
	return out
}

// serveMetrics serves g at http://addr/metrics until ctx ends or stop is
// called, and returns the address it bound. It fails at once if addr
// cannot be bound.
func serveMetrics(ctx context.Context, addr string, g prometheus.Gatherer) (bound string, stop func(), err error) {
	lis, err := net.Listen("tcp", addr)
	if err != nil {
		return "", nil, fmt.Errorf("metrics: listen on %s: %w", addr, err)
	}
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", promhttp.HandlerFor(g, promhttp.HandlerOpts{ErrorHandling: promhttp.ContinueOnError}))
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := srv.Serve(lis); err != nil && !errors.Is(err, http.ErrServerClosed) {
			klog.ErrorS(err, "Metrics server stopped", "address", addr)
		}
	}()
	klog.InfoS("Serving metrics", "address", lis.Addr().String(), "path", "/metrics")
	ctx, cancel := context.WithCancel(ctx)
	go func() {
		<-ctx.Done()
		sctx, scancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer scancel()
		_ = srv.Shutdown(sctx)
	}()
	return lis.Addr().String(), func() { cancel(); <-done }, nil
}

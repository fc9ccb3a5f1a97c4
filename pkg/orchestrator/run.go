package orchestrator

import (
	"context"
	"fmt"

	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/klog/v2"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	basinv1 "github.com/basin-csi/basin/pkg/api/v1alpha1"
	"github.com/basin-csi/basin/pkg/cachestatus"
	"github.com/basin-csi/basin/pkg/placement"
	"github.com/basin-csi/basin/pkg/warmupctl"
)

// Config is what Run needs; the controller's flags fill it.
type Config struct {
	// Namespace is the controller's own namespace (leader election lease,
	// the webhook's TLS secret, warmup pods are in the Warmup's namespace).
	Namespace string
	// LeaderElection runs the reconcilers on one replica at a time.
	LeaderElection bool
	// DriverName is the CSI driver's name (basin.csi.dev): volumes of
	// other drivers are ignored.
	DriverName string
	// Image is the image warmup pods run; "" takes the controller's own,
	// read from its pod (PodName in Namespace).
	Image   string
	PodName string
	// Metrics receives the components' own metrics (controller-runtime's
	// reconcile metrics are in its registry, served beside).
	Metrics prometheus.Registerer
	// Off names the components not to run; the zero value runs them all.
	Off Components
}

// Components names the optional components of the orchestrator. The
// VolumeCache clean-up always runs: it only deletes objects that no node
// plugin refreshes any more.
type Components struct {
	// Placement is the cache-aware placement webhook (pkg/placement).
	Placement bool
	// Warmup is the Warmup controller (pkg/warmupctl).
	Warmup bool
}

// NewScheme returns a scheme with the built-in types and Basin's.
func NewScheme() (*runtime.Scheme, error) {
	s := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{clientgoscheme.AddToScheme, basinv1.AddToScheme} {
		if err := add(s); err != nil {
			return nil, err
		}
	}
	return s, nil
}

// Run starts the manager with every component and blocks until ctx ends.
func Run(ctx context.Context, restCfg *rest.Config, cfg Config) error {
	scheme, err := NewScheme()
	if err != nil {
		return err
	}
	// controller-runtime logs (reconcile errors among them) through klog.
	ctrl.SetLogger(klog.NewKlogr())
	mgr, err := ctrl.NewManager(restCfg, manager.Options{
		Scheme: scheme,
		// The Warmup controller owns pods: cache its pods, not the cluster's.
		Cache: cache.Options{ByObject: map[client.Object]cache.ByObject{
			&corev1.Pod{}: {Label: warmupctl.PodCacheSelector()},
		}},
		LeaderElection:          cfg.LeaderElection,
		LeaderElectionID:        "basin-orchestrator",
		LeaderElectionNamespace: cfg.Namespace,
		// The controller plugin serves /metrics itself (one registry).
		Metrics:                metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress: "0",
	})
	if err != nil {
		return fmt.Errorf("orchestrator: %w", err)
	}
	if err := setup(ctx, mgr, cfg); err != nil {
		return fmt.Errorf("orchestrator: %w", err)
	}
	return mgr.Start(ctx)
}

// setup registers every component with mgr, but those cfg.Off names.
func setup(ctx context.Context, mgr manager.Manager, cfg Config) error {
	if !cfg.Off.Placement {
		if err := placement.Setup(ctx, mgr, placement.Config{Namespace: cfg.Namespace, DriverName: cfg.DriverName, Metrics: cfg.Metrics}); err != nil {
			return err
		}
	}
	if err := cachestatus.SetupCleanup(mgr, cachestatus.CleanupOptions{Metrics: cfg.Metrics}); err != nil {
		return err
	}
	if !cfg.Off.Warmup {
		if err := warmupctl.Setup(mgr, warmupctl.Options{DriverName: cfg.DriverName, Image: cfg.Image,
			PodNamespace: cfg.Namespace, PodName: cfg.PodName, Metrics: cfg.Metrics}); err != nil {
			return err
		}
	}
	return nil
}

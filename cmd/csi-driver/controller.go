package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strconv"
	"time"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/klog/v2"

	"github.com/basin-csi/basin/pkg/driver"
	"github.com/basin-csi/basin/pkg/orchestrator"
	"github.com/basin-csi/basin/pkg/tiersweep"
)

// controllerConfig is everything `csi-driver controller` needs, built from
// its flags by parseControllerArgs.
type controllerConfig struct {
	Driver         driver.Config
	Controller     driver.ControllerConfig
	MetricsAddress string // metrics.go
	// Orchestrate runs the Kubernetes controllers and the placement
	// webhook (pkg/orchestrator) beside the CSI services; it needs the
	// API server (in-cluster configuration, or Kubeconfig).
	Orchestrate  bool
	Orchestrator orchestrator.Config
	Kubeconfig   string
	// UploadSweepInterval is how often the controller aborts abandoned
	// multipart uploads in every volume (driver.UploadSweeper); 0: never.
	// It needs the API server (in-cluster configuration, or Kubeconfig).
	UploadSweepInterval time.Duration
	// TierSweepInterval is how often the controller keeps the shared
	// cache tiers within their bounds (pkg/tiersweep); 0: never. It needs
	// the API server too.
	TierSweepInterval time.Duration
}

// controllerFlagSet declares the flags of `csi-driver controller` into c.
// klog's flags (-v, ...) are added too.
func controllerFlagSet(c *controllerConfig, out io.Writer) *flag.FlagSet {
	fs := flag.NewFlagSet("controller", flag.ContinueOnError)
	fs.SetOutput(out)
	fs.StringVar(&c.Driver.Endpoint, "endpoint", driver.DefaultEndpoint, "CSI `endpoint` to listen on (unix:///path/to/csi.sock)")
	fs.StringVar(&c.Driver.NodeID, "node-id", "", "`name` of the machine the controller runs on (logs only)")
	fs.StringVar(&c.Driver.Name, "driver-name", driver.DefaultName, "CSI driver `name` (must match the CSIDriver object)")
	fs.BoolVar(&c.Controller.RequireSecret, "require-secret", false,
		"refuse requests whose provisioner secret holds no credentials, instead of using the default credential chain (IRSA, workload identity, environment)")
	metricsAddressFlag(fs, &c.MetricsAddress)
	healthAddressFlag(fs, &c.Driver.HealthAddress)
	fs.BoolVar(&c.Orchestrate, "orchestrate", false,
		"also run Basin's Kubernetes controllers (VolumeCache clean-up, Warmup) and the cache-aware placement webhook")
	fs.StringVar(&c.Kubeconfig, "kubeconfig", "", "kubeconfig `file` for --orchestrate and the upload sweep (default: the in-cluster configuration)")
	fs.DurationVar(&c.UploadSweepInterval, "upload-sweep-interval", driver.UploadSweepInterval,
		"how often to abort, in every volume's bucket, the incomplete multipart uploads older than a day that killed FUSE processes left (needs the API server; 0: never)")
	fs.DurationVar(&c.TierSweepInterval, "shared-cache-sweep-interval", tiersweep.DefaultInterval,
		"how often to keep every shared cache tier that volumes bound (sharedCacheSize, sharedCacheMaxAge) within its bounds, deleting the least recently used objects (needs the API server; 0: never)")
	fs.StringVar(&c.Orchestrator.Namespace, "namespace", os.Getenv("POD_NAMESPACE"),
		"the controller's own `namespace` (leader election, webhook secret); default $POD_NAMESPACE")
	fs.BoolVar(&c.Orchestrator.LeaderElection, "leader-elect", true, "with --orchestrate, run the reconcilers on one replica at a time")
	fs.BoolFunc("placement-webhook", "with --orchestrate, serve the cache-aware placement webhook (`true|false`, default true)", offFlag("placement-webhook", &c.Orchestrator.Off.Placement))
	fs.BoolFunc("warmup-controller", "with --orchestrate, run the Warmup controller (`true|false`, default true)", offFlag("warmup-controller", &c.Orchestrator.Off.Warmup))
	fs.StringVar(&c.Orchestrator.Image, "warmup-image", os.Getenv("POD_IMAGE"),
		"`image` of the Warmup controller's pods (default $POD_IMAGE: the controller's own image)")
	klog.InitFlags(fs)
	fs.Usage = func() {
		_, _ = fmt.Fprint(out, "Usage: csi-driver controller [flags]\n\n"+
			"Serves the CSI Identity and Controller services (CreateVolume, DeleteVolume) next to the\n"+
			"csi-provisioner sidecar. Credentials come from the provisioner secret of each request.\n\nFlags:\n")
		fs.PrintDefaults()
	}
	return fs
}

// offFlag parses the value of a component's on/off flag into *off
// (true when the component is turned off).
func offFlag(name string, off *bool) func(string) error {
	return func(v string) error {
		on, err := strconv.ParseBool(v)
		if err != nil {
			return fmt.Errorf("--%s: %q is not true or false", name, v)
		}
		*off = !on
		return nil
	}
}

// parseControllerArgs parses the flags into a controllerConfig.
func parseControllerArgs(args []string, out io.Writer) (controllerConfig, error) {
	var c controllerConfig
	fs := controllerFlagSet(&c, out)
	if err := fs.Parse(args); err != nil {
		return controllerConfig{}, err
	}
	if fs.NArg() > 0 {
		return controllerConfig{}, fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	c.Driver.Version = version
	c.Orchestrator.DriverName = c.Driver.Name
	c.Orchestrator.PodName = os.Getenv("POD_NAME")
	if c.Orchestrate && c.Orchestrator.Namespace == "" {
		return controllerConfig{}, fmt.Errorf("--orchestrate needs --namespace (or $POD_NAMESPACE)")
	}
	return c, nil
}

// runController is `csi-driver controller`: serve until SIGINT/SIGTERM
// cancels ctx.
func runController(ctx context.Context, args []string, _, stderr io.Writer) error {
	cfg, err := parseControllerArgs(args, stderr)
	if errors.Is(err, flag.ErrHelp) {
		return nil
	}
	if err != nil {
		return err
	}
	defer klog.Flush()
	ctrl, err := driver.NewController(cfg.Controller)
	if err != nil {
		return err
	}
	stopMetrics, err := startControllerMetrics(ctx, cfg.MetricsAddress, &cfg.Driver, &cfg.Orchestrator)
	if err != nil {
		return err
	}
	defer stopMetrics()
	d, err := driver.New(cfg.Driver, ctrl)
	if err != nil {
		return err
	}
	restCfg, restErr := clientcmd.BuildConfigFromFlags("", cfg.Kubeconfig)
	if err := startUploadSweep(ctx, cfg, ctrl, restCfg, restErr); err != nil {
		return err
	}
	if err := startTierSweep(ctx, cfg, restCfg, restErr); err != nil {
		return err
	}
	if !cfg.Orchestrate {
		return d.Run(ctx)
	}
	if restErr != nil {
		return fmt.Errorf("orchestrate: %w", restErr)
	}
	// Either part ending ends both: the pod restarts whole.
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	errs := make(chan error, 2)
	go func() { errs <- d.Run(ctx) }()
	go func() { errs <- orchestrator.Run(ctx, restCfg, cfg.Orchestrator) }()
	err = <-errs
	cancel()
	return errors.Join(err, <-errs)
}

// startUploadSweep starts the controller's periodic pass over volumes
// (driver.UploadSweeper) unless its interval is 0. Without the API server
// (restErr) it is off, and says so.
func startUploadSweep(ctx context.Context, cfg controllerConfig, ctrl *driver.Controller, restCfg *rest.Config, restErr error) error {
	if cfg.UploadSweepInterval <= 0 {
		return nil
	}
	if restErr != nil {
		klog.InfoS("no Kubernetes API: the controller's sweep of abandoned uploads is off", "err", restErr)
		return nil
	}
	cs, err := kubernetes.NewForConfig(restCfg)
	if err != nil {
		return fmt.Errorf("upload sweep: %w", err)
	}
	sw, err := driver.NewUploadSweeper(ctrl, cfg.Driver.Metrics)
	if err != nil {
		return fmt.Errorf("upload sweep: %w", err)
	}
	go sw.Run(ctx, cfg.UploadSweepInterval, sweptVolumes(cs, cfg.Driver.Name))
	return nil
}

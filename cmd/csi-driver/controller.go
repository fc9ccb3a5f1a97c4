package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"

	"k8s.io/klog/v2"

	"github.com/basin-csi/basin/pkg/driver"
)

// controllerConfig is everything `csi-driver controller` needs, built from
// its flags by parseControllerArgs.
type controllerConfig struct {
	Driver         driver.Config
	Controller     driver.ControllerConfig
	MetricsAddress string // metrics.go
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
	klog.InitFlags(fs)
	fs.Usage = func() {
		_, _ = fmt.Fprint(out, "Usage: csi-driver controller [flags]\n\n"+
			"Serves the CSI Identity and Controller services (CreateVolume, DeleteVolume) next to the\n"+
			"csi-provisioner sidecar. Credentials come from the provisioner secret of each request.\n\nFlags:\n")
		fs.PrintDefaults()
	}
	return fs
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
	stopMetrics, err := startControllerMetrics(ctx, cfg.MetricsAddress, &cfg.Driver)
	if err != nil {
		return err
	}
	defer stopMetrics()
	d, err := driver.New(cfg.Driver, ctrl)
	if err != nil {
		return err
	}
	return d.Run(ctx)
}

package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/klog/v2"

	"github.com/basin-csi/basin/pkg/cachestatus"
	"github.com/basin-csi/basin/pkg/driver"
	"github.com/basin-csi/basin/pkg/fdholder"
)

// nodeConfig is everything `csi-driver node` needs, built from its flags
// by parseNodeArgs.
type nodeConfig struct {
	Driver         driver.Config
	Node           driver.NodeConfig
	MetricsAddress string            // metrics.go
	HolderSocket   string            // fdholder.go; "" for none
	CacheStatus    cacheStatusConfig // cachestatus.go
}

// nodeFlagSet declares the flags of `csi-driver node` into c.
func nodeFlagSet(c *nodeConfig, out io.Writer) *flag.FlagSet {
	fs := flag.NewFlagSet("node", flag.ContinueOnError)
	fs.SetOutput(out)
	fs.StringVar(&c.Driver.Endpoint, "endpoint", driver.DefaultEndpoint, "CSI `endpoint` to listen on (unix:///path/to/csi.sock)")
	fs.StringVar(&c.Driver.NodeID, "node-id", "", "`name` of this node (the Kubernetes node name); required")
	fs.StringVar(&c.Driver.Name, "driver-name", driver.DefaultName, "CSI driver `name` (must match the CSIDriver object)")
	fs.StringVar(&c.Node.CacheRoot, "cache-root", driver.DefaultCacheRoot, "`directory` holding one cache directory per volume (kept across unstage and restarts)")
	fs.StringVar(&c.Node.StateFile, "state-file", driver.DefaultStateFile, "`file` recording staged volumes and published targets (survives restarts)")
	fs.StringVar(&c.Node.SharesDir, "shares-dir", "", "`directory` of the mounts of the FUSE processes read-only volumes share; empty: beside the staging directories, in kubelet's tree")
	fs.StringVar(&c.Node.MountBinary, "mount-binary", "", "csi-driver `executable` run as the per-volume FUSE process (default: this executable)")
	fs.StringVar(&c.HolderSocket, "fdholder-socket", "", "unix `socket` of `csi-driver fdholder`, which keeps the FUSE connections across restarts of this plugin\n(empty: none, a restart remounts and open files break)")
	fs.BoolVar(&c.Node.Supervisor.Standby, "fuse-standby", true, "keep a second FUSE process per volume started and waiting to take the connection over when the serving one dies:\na faster heal on a node whose cores are busy, for an idle process's memory (tens of MiB)")
	metricsAddressFlag(fs, &c.MetricsAddress)
	cacheStatusFlags(fs, &c.CacheStatus)
	healthAddressFlag(fs, &c.Driver.HealthAddress)
	registrationFlags(fs, &c.Driver.Registration)
	klog.InitFlags(fs)
	fs.Usage = func() {
		_, _ = fmt.Fprint(out, "Usage: csi-driver node [flags]\n\n"+
			"Serves the CSI Identity and Node services on a node: stages volumes (one FUSE process and one\n"+
			"cache per volume), publishes them into pods, and heals mounts whose FUSE process died.\n\nFlags:\n")
		fs.PrintDefaults()
	}
	return fs
}

// parseNodeArgs parses the flags into a nodeConfig.
func parseNodeArgs(args []string, out io.Writer) (nodeConfig, error) {
	var c nodeConfig
	fs := nodeFlagSet(&c, out)
	if err := fs.Parse(args); err != nil {
		return nodeConfig{}, err
	}
	if fs.NArg() > 0 {
		return nodeConfig{}, fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	if c.Driver.NodeID == "" {
		return nodeConfig{}, errors.New("--node-id is required")
	}
	if c.CacheStatus.Interval <= 0 {
		return nodeConfig{}, errors.New("--cache-status-interval must be positive")
	}
	if c.Node.MountBinary == "" {
		exe, err := os.Executable()
		if err != nil {
			return nodeConfig{}, fmt.Errorf("--mount-binary not given and this executable is unknown: %w", err)
		}
		c.Node.MountBinary = exe
	}
	c.Node.NodeID = c.Driver.NodeID
	if c.HolderSocket != "" {
		c.Node.Supervisor.Holder = fdholder.NewClient(c.HolderSocket)
	}
	c.Driver.Version = version
	return c, nil
}

// runNode is `csi-driver node`: take back the staged volumes, then serve
// until SIGINT/SIGTERM cancels ctx. FUSE processes keep running after it
// exits; the next node plugin takes them back.
func runNode(ctx context.Context, args []string, _, stderr io.Writer) error {
	cfg, err := parseNodeArgs(args, stderr)
	if errors.Is(err, flag.ErrHelp) {
		return nil
	}
	if err != nil {
		return err
	}
	defer klog.Flush()
	// When this process started: a restart's pause begins before it.
	klog.InfoS("node plugin starting", "version", version, "mainAt", processStart.Format("15:04:05.000"))
	// The cache status reporter never stops the plugin: without the API
	// server the plugin serves its volumes all the same.
	var (
		reportCacheStatus func(context.Context)
		reporterMetrics   []prometheus.Collector
		node              *driver.Node // set before the reporter runs
	)
	if cfg.CacheStatus.Enabled {
		dataset := func(id string) (cachestatus.Dataset, bool) {
			d, ok := node.Dataset(id)
			return cachestatus.Dataset{Bytes: d.Bytes, Objects: d.Objects}, ok
		}
		members := func(id string) []string { return node.ShareMembers(id) }
		rep, run, err := newCacheStatus(cfg.CacheStatus, cfg.Driver.NodeID, cfg.Driver.Name, cfg.Node.CacheRoot, dataset, members)
		if err != nil {
			klog.ErrorS(err, "The cache status is not reported")
		} else {
			cfg.Node.VolumesChanged = rep.Trigger
			reportCacheStatus, reporterMetrics = run, rep.Collectors()
		}
	}
	node, err = driver.NewNode(ctx, cfg.Node)
	if err != nil {
		return err
	}
	defer node.Close()
	if reportCacheStatus != nil {
		rctx, cancel := context.WithCancel(ctx)
		done := make(chan struct{})
		go func() { defer close(done); reportCacheStatus(rctx) }()
		defer func() { cancel(); <-done }()
	}
	stopMetrics, err := startNodeMetrics(ctx, cfg.MetricsAddress, &cfg.Driver, node, reporterMetrics...)
	if err != nil {
		return err
	}
	defer stopMetrics()
	d, err := driver.New(cfg.Driver, node)
	if err != nil {
		return err
	}
	return d.Run(ctx)
}

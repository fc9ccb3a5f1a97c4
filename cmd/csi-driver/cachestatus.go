package main

import (
	"context"
	"flag"
	"fmt"
	"time"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/klog/v2"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/basin-csi/basin/pkg/cachestatus"
)

// The node plugin's cache status reporter (pkg/cachestatus): off unless
// --report-cache-status, as node plugins outside Kubernetes (tests, make
// demo, csi-sanity) have no API server.

// cacheStatusConfig is what the reporter's flags set.
type cacheStatusConfig struct {
	Enabled    bool
	Interval   time.Duration
	Kubeconfig string
}

// cacheStatusFlags declares the reporter's flags into c.
func cacheStatusFlags(fs *flag.FlagSet, c *cacheStatusConfig) {
	fs.BoolVar(&c.Enabled, "report-cache-status", false,
		"report each volume's cache on this node as a VolumeCache object (basin.csi.dev/v1alpha1); needs the API server")
	fs.DurationVar(&c.Interval, "cache-status-interval", cachestatus.DefaultInterval,
		"how often the caches are read for --report-cache-status (a status is written only when it changed, or every "+cachestatus.DefaultRefresh.String()+")")
	fs.StringVar(&c.Kubeconfig, "kubeconfig", "", "kubeconfig `file` for --report-cache-status (default: the in-cluster configuration)")
}

// newCacheStatus builds the reporter and the index of PersistentVolumes it
// names volumes with; run starts both until ctx ends. dataset tells the
// size of a volume where the node knows it.
func newCacheStatus(c cacheStatusConfig, nodeName, driverName, cacheRoot string, dataset func(string) (cachestatus.Dataset, bool),
	members func(string) []string) (rep *cachestatus.Reporter, run func(context.Context), err error) {
	restCfg, err := clientcmd.BuildConfigFromFlags("", c.Kubeconfig)
	if err != nil {
		return nil, nil, fmt.Errorf("cache status: %w", err)
	}
	// Few, small requests; none may hang a pass.
	restCfg.QPS, restCfg.Burst, restCfg.Timeout = 5, 10, 30*time.Second
	restCfg.UserAgent = "basin-node/" + version
	cs, err := kubernetes.NewForConfig(restCfg)
	if err != nil {
		return nil, nil, fmt.Errorf("cache status: %w", err)
	}
	scheme, err := cachestatus.NewScheme()
	if err != nil {
		return nil, nil, err
	}
	cl, err := client.New(restCfg, client.Options{Scheme: scheme})
	if err != nil {
		return nil, nil, fmt.Errorf("cache status: %w", err)
	}
	pvs, err := cachestatus.NewPVIndex(cs, driverName)
	if err != nil {
		return nil, nil, err
	}
	rep, err = cachestatus.NewReporter(cl, pvs, cachestatus.Config{
		NodeName: nodeName, CacheRoot: cacheRoot, Interval: c.Interval, Dataset: dataset, Members: members,
	})
	if err != nil {
		return nil, nil, err
	}
	run = func(ctx context.Context) {
		klog.InfoS("Reporting the cache status", "node", nodeName, "interval", c.Interval)
		go pvs.Run(ctx)
		rep.Run(ctx)
	}
	return rep, run, nil
}

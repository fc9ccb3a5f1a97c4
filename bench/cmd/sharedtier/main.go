// Command sharedtier is the benchmark scenario "three nodes, one data
// set" of the shared cache tier (sharedCache): three Basin mounts, each
// with its own empty local cache, play three nodes reading the same data
// set one after the other. The origin MinIO sits behind the WAN emulator;
// the tier is a second MinIO on loopback, without the emulator. For each
// data set (small files in random order with 8 threads, and a checkpoint
// read sequentially) it reports every node's cold epoch: time, the origin's
// requests and bytes (counted by the emulator), the tier's lookups, hits
// and stores (the mount's own metrics, read on its admin socket), and the
// FUSE process's peak RSS; then the same epoch on a mount without the tier
// (what every node costs today). A last epoch kills the tier's server
// (SIGKILL) halfway through and counts the files that failed to read.
//
// Run it as root (FUSE mounts, drop_caches) from the repository root;
// bench/run.sh runs it after the main benchmark (make bench):
//
//	go build -o bin/csi-driver ./cmd/csi-driver
//	go run ./bench/cmd/sharedtier -basin bin/csi-driver [-quick]
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"
	"time"

	"github.com/basin-csi/basin/bench/dataset"
	"github.com/basin-csi/basin/bench/epoch"
	"github.com/basin-csi/basin/bench/wanproxy"
)

type config struct {
	basin, minio, tools, work, out string
	command                        string
	quick                          bool
	small, ckpt                    dataset.Set
	threads                        int
	timeout                        time.Duration
	proxy                          wanproxy.Config
}

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, os.Args[1:]); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			os.Exit(0)
		}
		fmt.Fprintln(os.Stderr, "sharedtier:", err)
		os.Exit(1)
	}
}

func parseFlags(args []string) (config, error) {
	home, _ := os.UserHomeDir()
	var c config
	fs := flag.NewFlagSet("sharedtier", flag.ContinueOnError)
	fs.StringVar(&c.basin, "basin", "bin/csi-driver", "csi-driver binary")
	fs.StringVar(&c.minio, "minio", "minio", "MinIO binary (name or path)")
	fs.StringVar(&c.tools, "tools", filepath.Join(home, ".cache/basin-tools/bin"), "directory searched first for minio")
	fs.StringVar(&c.work, "work", "/var/tmp/basin-sharedtier", "work directory: the nodes' caches, and the servers' data (each in a tmpfs mounted there for the run)")
	fs.StringVar(&c.out, "out", "bench/results", "directory of the report")
	fs.StringVar(&c.command, "command", "", "command line recorded in the report (default: this one)")
	fs.BoolVar(&c.quick, "quick", false, "reduced data sets (make bench-quick)")
	sizes := epoch.SetFlags(fs)
	fs.IntVar(&c.threads, "threads", 8, "readers of the small-file epoch")
	fs.DurationVar(&c.timeout, "epoch-timeout", 10*time.Minute, "deadline of one epoch")
	proxy := wanproxy.Flags(fs)
	if err := fs.Parse(args); err != nil {
		return c, err
	}
	if fs.NArg() > 0 {
		return c, fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	c.proxy = *proxy
	var err error
	if c.small, c.ckpt, err = sizes.Sets("tier", c.quick); err != nil {
		return c, err
	}
	if c.basin, err = filepath.Abs(c.basin); err != nil {
		return c, err
	}
	if c.command == "" {
		c.command = "sharedtier " + fmt.Sprint(args)
	}
	return c, nil
}

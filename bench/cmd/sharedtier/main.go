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
	"flag"

	"github.com/basin-csi/basin/bench/epoch"
)

// config is the scenario's command line: the node-level scenarios' own.
type config struct{ epoch.Config }

func main() { epoch.Main("sharedtier", run) }

func parseFlags(args []string) (config, error) {
	var c config
	fs := flag.NewFlagSet("sharedtier", flag.ContinueOnError)
	c.Register(fs, "/var/tmp/basin-sharedtier")
	return c, c.Parse(fs, args, "tier")
}

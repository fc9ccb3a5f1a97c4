// Command secondpv is the benchmark scenario "a second PV of the same
// dataset" (issue 27): on a node where a first read-only volume (PV1)
// already read a data set, how fast is a second volume of the same source
// (PV2) on its first, cold epoch? The node plugin serves PV2 from PV1's
// FUSE process (pkg/driver/node_share.go): PV2's published target is a
// read-only bind mount of PV1's mount, of the data set's directory for a
// nested prefix. The scenario measures that (design B) against the other
// way it could be built, a second FUSE process over the same cache (design
// A), in one run.
//
// The origin MinIO sits behind the WAN emulator; PV1 is a `csi-driver mount
// --read-only` of the bucket with its own cache directory. For each data set
// (small files in random order with 8 threads, a checkpoint read
// sequentially) it measures, in this order:
//
//  1. PV1's cold epoch (empty cache, page cache dropped);
//  2. rounds of PV2's epoch through a read-only bind mount of the data
//     set's directory of PV1's mount, made with the node plugin's own
//     supervisor.LinuxKernel.Bind, and PV1's warm epoch, each with the
//     page cache kept and dropped (echo 3 > /proc/sys/vm/drop_caches),
//     the order reversed every other round; the first is PV2's with the
//     page cache as PV1's cold epoch left it;
//  3. with PV1's process unmounted, rounds of design A's stand-in: a new
//     `csi-driver mount` process over PV1's (now warm) cache directory,
//     one epoch each with the page cache dropped and kept.
//
// Each epoch reports its time, the origin's requests and bytes (counted by
// the emulator), the FUSE process's CPU (utime + stime from /proc) and its
// peak RSS during the epoch (VmHWM, reset first through clear_refs).
//
// Run it as root (FUSE mounts, bind mounts, drop_caches) from the
// repository root; bench/run.sh runs it after the main benchmark:
//
//	go build -o bin/csi-driver ./cmd/csi-driver
//	go run ./bench/cmd/secondpv -basin bin/csi-driver [-quick]
package main

import (
	"flag"
	"fmt"

	"github.com/basin-csi/basin/bench/epoch"
)

// config is the scenario's command line.
type config struct {
	epoch.Config
	rounds int
}

func main() { epoch.Main("secondpv", run) }

func parseFlags(args []string) (config, error) {
	var c config
	fs := flag.NewFlagSet("secondpv", flag.ContinueOnError)
	c.Register(fs, "/var/tmp/basin-secondpv")
	fs.IntVar(&c.rounds, "rounds", 9, "rounds of the warm epochs (PV2 and PV1 warm) and of design A")
	if err := c.Parse(fs, args, "secondpv"); err != nil {
		return c, err
	}
	if c.rounds < 1 {
		return c, fmt.Errorf("-rounds %d: want 1 or more", c.rounds)
	}
	return c, nil
}

// Command coldread measures the cold-read goal on a real mount: one
// sequential reader of large objects through a fresh Basin mount with an
// empty cache, against a plain download of the same objects by parallel
// ranged GETs (into memory, or into a local file with -download-to-file),
// all through the same WAN emulator in front of MinIO, whose data is in a
// tmpfs (a remote bucket's disks are not the cache's disk).
//
// Every round reads the objects once per side: one download per -parallel
// value and one mount per -bin, in an order that rotates from round to
// round. The page cache is dropped before each side. The report gives each
// round's rates, the GETs each side sent, each mount's rate as a ratio to
// the best download of its round and to the emulated link's aggregate
// rate, the medians of all rounds, and the peak RSS (VmHWM) of each
// binary's FUSE process.
//
// Run it as root (FUSE mount, drop_caches) from the repository root, after
// building the driver:
//
//	go build -o bin/csi-driver ./cmd/csi-driver
//	go run ./bench/cmd/coldread                  # WAN defaults: 30 ms, 60 MB/s per connection
//	go run ./bench/cmd/coldread -conn-mbps 0 -ttfb 0 -total-mbps 0   # loopback MinIO, CPU-bound
//	go run ./bench/cmd/coldread -bin old=/tmp/old -bin new=bin/csi-driver -parallel 8,32 -files 4 -size 1073741824
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"

	"github.com/basin-csi/basin/bench/wanproxy"
)

const bucket = "basin-coldread"

type config struct {
	bins                 binFlag
	minio, tools, work   string
	basinFlags           []string
	size, part           int64
	files                int
	parallel             []int
	rounds               int
	bucketOnDisk, toFile bool
	proxy                wanproxy.Config
}

// binFlag collects -bin NAME=PATH.
type binFlag []mountSide

func (b *binFlag) String() string { return fmt.Sprint(*b) }
func (b *binFlag) Set(v string) error {
	name, path, ok := strings.Cut(v, "=")
	fields := strings.Fields(path)
	if !ok || name == "" || len(fields) == 0 {
		return errors.New("want NAME=PATH [FLAG...]")
	}
	*b = append(*b, mountSide{label: name, bin: fields[0], flags: fields[1:]})
	return nil
}

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, os.Args[1:]); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			os.Exit(0)
		}
		fmt.Fprintln(os.Stderr, "coldread:", err)
		os.Exit(1)
	}
}

func parseFlags(args []string) (config, error) {
	home, _ := os.UserHomeDir()
	var c config
	fs := flag.NewFlagSet("coldread", flag.ContinueOnError)
	basin := fs.String("basin", "bin/csi-driver", "csi-driver binary (when no -bin is given)")
	fs.Var(&c.bins, "bin", "NAME=PATH of a csi-driver binary, optionally followed by flags of its own (\"wide=bin/csi-driver --max-parallel-fetches=16\"); repeat for an A/B (default: basin=-basin)")
	fs.StringVar(&c.minio, "minio", "minio", "MinIO binary (name or path)")
	fs.StringVar(&c.tools, "tools", filepath.Join(home, ".cache/basin-tools/bin"), "directory searched first for minio")
	fs.StringVar(&c.work, "work", "/var/tmp/basin-coldread", "work directory: the mounts' caches, and MinIO's data with -bucket-on-disk (kept for later runs)")
	fs.BoolVar(&c.bucketOnDisk, "bucket-on-disk", false, "keep MinIO's data under -work instead of a tmpfs: its reads then share the local disk with the cache's writes, which a remote bucket's do not")
	fs.Int64Var(&c.size, "size", 2<<30, "object size, bytes")
	fs.IntVar(&c.files, "files", 1, "objects read one after the other by each side (the benchmark's checkpoint read: 4 of 1 GiB)")
	fs.Int64Var(&c.part, "part", 8<<20, "download: bytes per ranged GET")
	fs.BoolVar(&c.toFile, "download-to-file", false, "download into a file on the cache's disk (under -work), as a download tool does, instead of into memory")
	par := fs.String("parallel", "8", "download: concurrent ranged GETs, a comma-separated list for one download each (e.g. 8,32: the second shows what the link carries)")
	fs.IntVar(&c.rounds, "rounds", 5, "rounds; each reads the objects once per side")
	proxy := wanproxy.Flags(fs)
	fs.Func("basin-flag", "a `flag` for csi-driver mount, after the benchmark's defaults (repeatable: -basin-flag=--read-ahead=64Mi)", func(v string) error {
		c.basinFlags = append(c.basinFlags, v)
		return nil
	})
	if err := fs.Parse(args); err != nil {
		return c, err
	}
	c.proxy = *proxy
	for _, f := range strings.Split(*par, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n <= 0 {
			return c, fmt.Errorf("-parallel %q: want positive integers", *par)
		}
		c.parallel = append(c.parallel, n)
	}
	if c.size <= 0 || c.part <= 0 || c.rounds <= 0 || c.files <= 0 {
		return c, fmt.Errorf("-size, -part, -files and -rounds must be positive")
	}
	if len(c.bins) == 0 {
		c.bins = binFlag{{label: "basin", bin: *basin}}
	}
	for i := range c.bins {
		abs, err := filepath.Abs(c.bins[i].bin)
		if err != nil {
			return c, err
		}
		c.bins[i].bin = abs
	}
	return c, nil
}

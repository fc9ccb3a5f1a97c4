// Command coldcpu measures the FUSE process's CPU per cold small file, side
// by side for one or more csi-driver binaries: every round mounts each
// binary in turn over an empty cache (the order rotating from round to
// round), drops the page cache, reads every file of a small-file data set
// once with a fixed number of reader threads in an order of the round's
// own, and takes the FUSE process's utime + stime (with its live
// descendants, from /proc/PID/stat, in 10 ms ticks) before and after the
// epoch. It reports per round and as medians: files/s, CPU ms per file,
// the ratio of each binary's CPU per file to the first binary's in the
// same round, the peak RSS (VmHWM during the epoch) and the load average.
//
// The origin is MinIO with its data in a tmpfs behind the WAN emulator
// (bench/epoch), as in the benchmark's small-file epoch; -ttfb 0
// -conn-mbps 0 -total-mbps 0 makes it loopback.
//
// Run it as root (FUSE mount, tmpfs, drop_caches) from the repository root:
//
//	go build -o /tmp/old/csi-driver ./cmd/csi-driver   # on the old commit
//	go build -o bin/csi-driver ./cmd/csi-driver
//	go run ./bench/cmd/coldcpu -bin old=/tmp/old/csi-driver -bin new=bin/csi-driver -files 4000 -rounds 3
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/basin-csi/basin/bench/dataset"
	"github.com/basin-csi/basin/bench/epoch"
	"github.com/basin-csi/basin/bench/scenario"
	"github.com/basin-csi/basin/bench/sut"
	"github.com/basin-csi/basin/bench/wanproxy"
)

const bucket = "basin-coldcpu"

type config struct {
	bins               []binary
	minio, tools, work string
	files, dirs        int
	size               int64
	threads, rounds    int
	proxy              wanproxy.Config
}

// binary is one csi-driver under test, with flags of its own.
type binary struct {
	label, path string
	flags       []string
}

func main() { epoch.Main("coldcpu", run) }

func parseFlags(args []string) (config, error) {
	home, _ := os.UserHomeDir()
	var c config
	fs := flag.NewFlagSet("coldcpu", flag.ContinueOnError)
	fs.Func("bin", "NAME=PATH [FLAG...] of a csi-driver binary; repeat for a side-by-side run (the first is the reference of the ratios)", func(v string) error {
		name, rest, ok := strings.Cut(v, "=")
		f := strings.Fields(rest)
		if !ok || name == "" || len(f) == 0 {
			return errors.New("want NAME=PATH [FLAG...]")
		}
		abs, err := filepath.Abs(f[0])
		if err != nil {
			return err
		}
		c.bins = append(c.bins, binary{label: name, path: abs, flags: f[1:]})
		return nil
	})
	fs.StringVar(&c.minio, "minio", "minio", "MinIO binary (name or path)")
	fs.StringVar(&c.tools, "tools", filepath.Join(home, ".cache/basin-tools/bin"), "directory searched first for minio")
	fs.StringVar(&c.work, "work", "/var/tmp/basin-coldcpu", "work directory: the mounts' caches, and MinIO's data in a tmpfs mounted there")
	fs.IntVar(&c.files, "files", 4000, "small files in the data set")
	fs.IntVar(&c.dirs, "dirs", 20, "directories the files are spread over")
	fs.Int64Var(&c.size, "size", 128<<10, "file size, bytes")
	fs.IntVar(&c.threads, "threads", 8, "reader threads")
	fs.IntVar(&c.rounds, "rounds", 3, "rounds; each reads the data set once through each binary")
	proxy := wanproxy.Flags(fs)
	if err := fs.Parse(args); err != nil {
		return c, err
	}
	c.proxy = *proxy
	if len(c.bins) == 0 {
		return c, errors.New("-bin NAME=PATH is required")
	}
	if c.files <= 0 || c.dirs <= 0 || c.size <= 0 || c.threads <= 0 || c.rounds <= 0 {
		return c, errors.New("-files, -dirs, -size, -threads and -rounds must be positive")
	}
	if c.minio = sut.FindBinary(c.minio, c.tools); c.minio == "" {
		return c, fmt.Errorf("minio not found in %s or $PATH (hack/install-tools.sh)", c.tools)
	}
	return c, nil
}

// result is one binary's epoch of one round.
type result struct {
	res  epoch.Result
	cpu  time.Duration
	peak int64
	load string
}

func (r result) msPerFile() float64 {
	return float64(r.cpu.Microseconds()) / 1e3 / float64(max(r.res.Files, 1))
}

func run(ctx context.Context, args []string) error {
	cfg, err := parseFlags(args)
	if err != nil {
		return err
	}
	set := dataset.Small(cfg.files, cfg.size, cfg.dirs)
	set.Name = "coldcpu-small"
	if err := set.Validate(); err != nil {
		return err
	}
	o, err := epoch.StartOrigin(ctx, epoch.OriginConfig{MinIO: cfg.minio, Dir: filepath.Join(cfg.work, "origin"),
		Bucket: bucket, Sets: []dataset.Set{set}, Proxy: cfg.proxy, Work: filepath.Join(cfg.work, "node"), Tools: cfg.tools})
	if err != nil {
		return err
	}
	defer o.Close()
	systems := make([]sut.System, len(cfg.bins))
	for i, b := range cfg.bins {
		systems[i] = sut.NewBasinNamed(o.Env, b.label, b.path, b.flags...)
		if err := systems[i].Check(ctx); err != nil {
			return fmt.Errorf("%s: %w", b.label, err)
		}
		fmt.Printf("%s: %s\n", b.label, systems[i].Describe())
	}
	fmt.Printf("%d files of %d KiB in %d directories, %d threads; WAN: ttfb %v, %d MB/s per connection, %d MB/s total\n",
		cfg.files, cfg.size>>10, cfg.dirs, cfg.threads, cfg.proxy.TTFB, cfg.proxy.ConnBandwidth/1e6, cfg.proxy.TotalBandwidth/1e6)
	all := make([][]result, len(systems))
	for round := range cfg.rounds {
		keys := epoch.Keys(set, 0xc01d+uint64(round), false)
		rs := make([]result, len(systems))
		for k := range systems {
			i := (k + round) % len(systems) // who goes first rotates
			if rs[i], err = epochOf(ctx, systems[i], set, keys, cfg.threads); err != nil {
				return fmt.Errorf("%s: %w", cfg.bins[i].label, err)
			}
		}
		var line strings.Builder
		fmt.Fprintf(&line, "round %d:", round+1)
		for i, r := range rs {
			all[i] = append(all[i], r)
			fmt.Fprintf(&line, " %s %.0f files/s, %.3f ms/file (÷ %s %.2f), peak RSS %d MiB, load %s, errors %d;",
				cfg.bins[i].label, float64(r.res.Files)/r.res.Elapsed.Seconds(), r.msPerFile(),
				cfg.bins[0].label, r.msPerFile()/rs[0].msPerFile(), r.peak>>20, r.load, r.res.Errors)
		}
		fmt.Println(strings.TrimSuffix(line.String(), ";"))
	}
	fmt.Printf("medians over %d rounds:\n", cfg.rounds)
	for i, rs := range all {
		var rate, ms, ratio []float64
		var peak int64
		for j, r := range rs {
			rate = append(rate, float64(r.res.Files)/r.res.Elapsed.Seconds())
			ms = append(ms, r.msPerFile())
			ratio = append(ratio, r.msPerFile()/all[0][j].msPerFile())
			peak = max(peak, r.peak)
		}
		fmt.Printf("  %-8s %6.0f files/s  %.3f ms/file  CPU ÷ %s %.2f (min %.2f, max %.2f)  largest peak RSS %d MiB\n",
			cfg.bins[i].label, median(rate), median(ms), cfg.bins[0].label, median(ratio), slices.Min(ratio), slices.Max(ratio), peak>>20)
	}
	return nil
}

// epochOf mounts s over an empty cache, drops the page cache, reads keys
// once and unmounts; the CPU and peak RSS are the epoch's.
func epochOf(ctx context.Context, s sut.System, set dataset.Set, keys []string, threads int) (result, error) {
	var r result
	if err := s.DropCache(); err != nil {
		return r, err
	}
	mnt, err := s.Mount(ctx)
	if err != nil {
		return r, err
	}
	defer func() { _ = s.Unmount(context.WithoutCancel(ctx)) }()
	if err := scenario.DropCaches(); err != nil {
		return r, err
	}
	r.load, _, _ = strings.Cut(sut.LoadAverage(), ",") // the 1-minute load
	r.cpu, r.peak, err = sut.Measure(s.PID(), func() (err error) {
		r.res, err = epoch.Read(ctx, mnt, keys, set, threads, nil)
		return err
	})
	if err != nil {
		return r, err
	}
	if err := epoch.VerifySample(mnt, set, keys, ""); err != nil {
		return r, err
	}
	return r, s.Unmount(ctx)
}

func median(v []float64) float64 {
	s := slices.Clone(v)
	slices.Sort(s)
	n := len(s)
	if n%2 == 1 {
		return s[n/2]
	}
	return (s[n/2-1] + s[n/2]) / 2
}

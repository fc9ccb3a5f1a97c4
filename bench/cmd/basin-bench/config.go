package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/basin-csi/basin/bench/dataset"
	"github.com/basin-csi/basin/bench/runner"
	"github.com/basin-csi/basin/bench/scenario"
	"github.com/basin-csi/basin/bench/wanproxy"
)

// allSystems lists the systems in report column order, the ceiling last.
func allSystems() []string { return []string{"basin", "rclone", "s3fs", "gcsfuse", "direct", "local"} }

// extraSystems are systems -systems accepts that the default leaves out:
// basin-noprefetch, Basin with directory prefetch off; basin-kernel,
// Basin read-only with kernel opens (its writing phases n/a);
// basin-async, Basin with uploadMode async; and basin-b, the -basin-b
// binary.
func extraSystems() []string {
	return []string{"basin-noprefetch", "basin-kernel", "basin-async", "basin-b"}
}

// config is the command's typed configuration.
type config struct {
	mode       string // "full" or "quick"
	systems    []string
	workDir    string
	toolsBin   string
	minioBin   string
	gcsBin     string
	basinBin   string
	basinBBin  string
	minioDir   string
	outDir     string
	command    string
	uploadJobs int
	proxy      wanproxy.Config // Upstream is filled in per server
	run        runner.Config
}

// presets are the data set sizes and deadlines of the two modes.
func preset(quick bool) runner.Config {
	if quick {
		return runner.Config{
			Sets: runner.Sets{
				Small:      dataset.Small(500, 128<<10, 10),
				Checkpoint: dataset.Checkpoint(2, 64<<20),
				Tree:       dataset.Tree(250, 5, 2),
				Write:      writeSet(2, 64<<20),
				Create:     createSet(200, 64<<10, 4),
				Images:     dataset.Images(300, 10),
			},
			Threads: 8, RandThreads: 16, RandReads: 64, RandSize: 1 << 20, RandWarmPasses: 8,
			PhaseTimeout: 60 * time.Second, VerifySample: 20,
		}
	}
	return runner.Config{
		Sets: runner.Sets{
			Small:      dataset.Small(20000, 128<<10, 100),
			Checkpoint: dataset.Checkpoint(4, 1<<30),
			Tree:       dataset.Tree(100000, 10, 3),
			Write:      writeSet(4, 1<<30),
			Create:     createSet(2000, 64<<10, 20),
			Images:     dataset.Images(5000, 50),
		},
		Threads: 8, RandThreads: 16, RandReads: 1024, RandSize: 1 << 20, RandWarmPasses: 8,
		PhaseTimeout: 5 * time.Minute, VerifySample: 100,
	}
}

// createSet is what scenario 7 creates: small files in directories, as
// `cp -r` of a folder of images or shards would.
func createSet(files int, size int64, dirs int) dataset.Set {
	s := dataset.Small(files, size, dirs)
	s.Name = "create"
	return s
}

// writeSet is what scenario 5 writes: checkpoint-like shards under their
// own name, so the report tells them from the read set.
func writeSet(shards int, size int64) dataset.Set {
	s := dataset.Checkpoint(shards, size)
	s.Name = "write"
	return s
}

func parseFlags(args []string, stderr io.Writer) (config, error) {
	fs := flag.NewFlagSet("basin-bench", flag.ContinueOnError)
	fs.SetOutput(stderr)
	home, _ := os.UserHomeDir()
	var (
		c                                   config
		quick                               bool
		systems                             string
		phaseTimeout                        time.Duration
		smallFiles, smallDirs, ckptFiles    int
		treeFiles, treeFanout, treeDepth    int
		writeFiles, randReads, torchWorkers int
		smallSize, ckptSize, writeSize      int64
		python, torchScript                 string
		scenarios                           []int
	)
	fs.BoolVar(&quick, "quick", false, "reduced data sets and deadlines (make bench-quick)")
	fs.StringVar(&systems, "systems", strings.Join(allSystems(), ","), "systems to run, in column order")
	fs.StringVar(&c.workDir, "work", "/var/tmp/basin-bench", "work directory: server data, local data sets, mounts, caches (reused across runs)")
	fs.StringVar(&c.toolsBin, "tools", filepath.Join(home, ".cache", "basin-tools", "bin"), "directory searched first for minio, fake-gcs-server, gcsfuse")
	fs.StringVar(&c.minioBin, "minio", "minio", "MinIO binary (name or path)")
	fs.StringVar(&c.gcsBin, "fake-gcs", "fake-gcs-server", "fake-gcs-server binary (name or path)")
	fs.StringVar(&c.basinBin, "basin", "", "csi-driver binary (default <work>/bin/csi-driver)")
	fs.StringVar(&c.minioDir, "minio-dir", "", "MinIO's data directory (default <work>/minio); a tmpfs keeps the bucket's writes off the disk the cache writes to, as a remote bucket does")
	fs.StringVar(&c.basinBBin, "basin-b", "", "a second csi-driver binary, the column basin-b (an A/B of two builds; add basin-b to -systems)")
	fs.StringVar(&c.outDir, "out", "bench/results", "directory of the report files")
	fs.StringVar(&c.command, "command", "", "command line recorded in the report (default: this one)")
	fs.IntVar(&c.uploadJobs, "upload-jobs", 16, "parallel uploads while generating data sets")
	proxy := wanproxy.Flags(fs)
	fs.DurationVar(&phaseTimeout, "phase-timeout", 0, "deadline of one timed phase; a phase stopped by it reports the rate of the part done (default: 5m, quick 60s)")
	fs.IntVar(&smallFiles, "small-files", 0, "override: number of small files")
	fs.Int64Var(&smallSize, "small-size", 0, "override: small file size, bytes")
	fs.IntVar(&smallDirs, "small-dirs", 0, "override: small-file directories")
	fs.IntVar(&ckptFiles, "ckpt-files", 0, "override: checkpoint shards")
	fs.Int64Var(&ckptSize, "ckpt-size", 0, "override: checkpoint shard size, bytes")
	fs.IntVar(&treeFiles, "tree-files", 0, "override: zero-byte objects in the tree")
	fs.IntVar(&treeFanout, "tree-fanout", 0, "override: directories per tree level")
	fs.IntVar(&treeDepth, "tree-depth", 0, "override: tree levels")
	fs.IntVar(&writeFiles, "write-files", 0, "override: shards written by the write scenario")
	fs.Int64Var(&writeSize, "write-size", 0, "override: size of each written shard, bytes")
	fs.IntVar(&randReads, "rand-reads", 0, "override: number of random reads")
	fs.Func("scenarios", "play only these scenarios, by number (e.g. 5 or 1,5); default all", func(v string) error {
		for f := range strings.SplitSeq(v, ",") {
			n, err := strconv.Atoi(strings.TrimSpace(f))
			if err != nil {
				return fmt.Errorf("scenario %q: want a number", f)
			}
			scenarios = append(scenarios, n)
		}
		return nil
	})
	fs.StringVar(&python, "python", "/usr/bin/python3", "interpreter with torch (Debian python3-torch)")
	fs.StringVar(&torchScript, "torch-script", "bench/torch_epoch.py", "the DataLoader epoch script")
	fs.IntVar(&torchWorkers, "torch-workers", 4, "DataLoader workers")
	if err := fs.Parse(args); err != nil {
		return c, err
	}
	if fs.NArg() > 0 {
		return c, fmt.Errorf("unexpected arguments %q", fs.Args())
	}

	c.mode = "full"
	if quick {
		c.mode = "quick"
	}
	c.run = preset(quick)
	s := &c.run.Sets
	override(&s.Small.Files, smallFiles)
	override(&s.Small.FileSize, smallSize)
	override(&s.Small.Dirs, smallDirs)
	override(&s.Checkpoint.Files, ckptFiles)
	override(&s.Checkpoint.FileSize, ckptSize)
	override(&s.Tree.Files, treeFiles)
	override(&s.Tree.Fanout, treeFanout)
	override(&s.Tree.Depth, treeDepth)
	override(&s.Write.Files, writeFiles)
	override(&s.Write.FileSize, writeSize)
	override(&c.run.RandReads, randReads)
	override(&c.run.PhaseTimeout, phaseTimeout)
	c.run.Torch = scenario.TorchConfig{Python: python, Script: torchScript, Workers: torchWorkers, Batch: 64}
	c.run.Scenarios = scenarios

	c.proxy = *proxy
	for _, name := range strings.Split(systems, ",") {
		name = strings.TrimSpace(name)
		if name == "basin-b" && c.basinBBin == "" {
			return c, fmt.Errorf("system basin-b needs -basin-b")
		}
		if known := append(allSystems(), extraSystems()...); !slices.Contains(known, name) {
			return c, fmt.Errorf("unknown system %q (known: %s)", name, strings.Join(known, ", "))
		}
		c.systems = append(c.systems, name)
	}
	if c.minioDir == "" {
		c.minioDir = filepath.Join(c.workDir, "minio")
	}
	if c.basinBin == "" {
		c.basinBin = filepath.Join(c.workDir, "bin", "csi-driver")
	}
	if c.command == "" {
		c.command = strings.Join(append([]string{"basin-bench"}, args...), " ")
	}
	if c.uploadJobs <= 0 {
		return c, errors.New("-upload-jobs must be positive")
	}
	return c, c.run.Validate()
}

func override[T int | int64 | time.Duration](dst *T, v T) {
	if v > 0 {
		*dst = v
	}
}

// Command basin-bench runs Basin's benchmark (issue 7): it starts MinIO and
// fake-gcs-server behind the WAN emulator, generates the data sets, plays
// every scenario on Basin, each peer (rclone, s3fs, gcsfuse), the direct
// client (bench/direct: the cold phases straight against the bucket, the
// ceiling of the cold phases) and a local directory (the ceiling), and
// writes bench/results/<date>.md with a PNG chart and the raw figures as
// JSON. `basin-bench direct-client` is the direct client's process.
//
// Run it as root (FUSE mounts, drop_caches) from the repository root;
// bench/run.sh builds what it needs and calls it:
//
//	bench/run.sh           # full run (make bench)
//	bench/run.sh --quick   # reduced run, a few minutes (make bench-quick)
//
// A system that cannot run on this machine is reported as n/a with the
// reason, never dropped silently.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log"
	"os"
	"os/signal"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/basin-csi/basin/bench/dataset"
	"github.com/basin-csi/basin/bench/direct"
	"github.com/basin-csi/basin/bench/report"
	"github.com/basin-csi/basin/bench/runner"
	"github.com/basin-csi/basin/bench/scenario"
	"github.com/basin-csi/basin/bench/servers"
	"github.com/basin-csi/basin/bench/sut"
	"github.com/basin-csi/basin/bench/wanproxy"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	var err error
	if len(os.Args) > 1 && os.Args[1] == direct.Command {
		err = direct.Main(ctx, os.Args[2:], os.Stdin, os.Stdout)
	} else {
		err = run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	}
	if err != nil {
		if errors.Is(err, flag.ErrHelp) {
			os.Exit(0)
		}
		fmt.Fprintln(os.Stderr, "basin-bench:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	cfg, err := parseFlags(args, stderr)
	if err != nil {
		return err
	}
	lg := log.New(stderr, "", log.Ltime)
	logf := lg.Printf
	started, loadAtStart := time.Now(), sut.LoadAverage()

	if why := torchUnavailable(ctx, cfg); why != "" {
		cfg.run.TorchUnavailable = why
		logf("PyTorch scenario n/a: %s", why)
	} else if why := imagesUnavailable(ctx, cfg); why != "" {
		cfg.run.ImagesUnavailable = why
		logf("ImageFolder scenario n/a: %s", why)
	}
	env, err := setup(ctx, cfg, logf)
	if env != nil {
		defer env.close()
	}
	if err != nil {
		return fmt.Errorf("setup: %w", err)
	}
	r, err := runner.New(cfg.run, runner.Hooks{
		Traffic:    env.traffic,
		Scenario:   env.scenario,
		Durable:    env.durable,
		Clean:      env.clean,
		StorePID:   env.storePID,
		DropCaches: scenario.DropCaches,
		CacheDisk:  func() (runner.DiskRoom, error) { return cacheDisk(cfg.workDir, cfg.minioDir) },
		Logf:       logf,
	})
	if err != nil {
		return err
	}
	rows, cols := r.Run(ctx, systems(cfg, env))

	rep := &report.Report{
		Mode:     cfg.mode,
		Command:  cfg.command,
		Machine:  machine(),
		Started:  started,
		Finished: time.Now(),
		Proxy:    proxyConfig(cfg),
		Sets:     []dataset.Set{cfg.run.Sets.Small, cfg.run.Sets.Checkpoint, cfg.run.Sets.Tree, cfg.run.Sets.Write, cfg.run.Sets.Create, cfg.run.Sets.Images},
		Systems:  cols,
		Rows:     rows,
		Notes:    append(notes(cfg), "Load average (1, 5, 15 min) at the start: "+loadAtStart+"; at the end: "+sut.LoadAverage()+"."),
	}
	path, err := rep.WriteFiles(cfg.outDir)
	if err != nil {
		return err
	}
	_, _ = fmt.Fprintln(stdout, path)
	return ctx.Err()
}

// systems builds the selected systems; one whose server side failed is
// wrapped so that it reports the failure as n/a.
func systems(cfg config, env *environment) []sut.System {
	se := env.sutEnv()
	var out []sut.System
	for _, name := range cfg.systems {
		var s sut.System
		switch name {
		case "basin":
			s = sut.NewBasin(se, cfg.basinBin)
		case "basin-b":
			s = sut.NewBasinNamed(se, "basin-b", cfg.basinBBin)
		case "basin-async":
			s = sut.NewBasinAsync(se, cfg.basinBin)
		case "basin-noprefetch":
			s = sut.NewBasinNoPrefetch(se, cfg.basinBin)
		case "basin-kernel":
			s = sut.NewBasinKernel(se, cfg.basinBin)
		case "rclone":
			s = sut.NewRclone(se)
		case "s3fs":
			s = sut.NewS3fs(se)
		case "gcsfuse":
			s = sut.NewGCSFuse(se)
		case "direct":
			s = sut.NewDirect(se, self())
		case "local":
			s = sut.NewLocal(se)
		}
		if sd := env.side(s.Backend()); sd != nil && sd.err != nil {
			s = sut.Unavailable(s, sd.err.Error())
		}
		out = append(out, s)
	}
	return out
}

// self is this program's path: the direct client's process runs it as
// `basin-bench direct-client`.
func self() string {
	p, err := os.Executable()
	if err != nil {
		return os.Args[0]
	}
	return p
}

func torchUnavailable(ctx context.Context, cfg config) string {
	if _, err := os.Stat(cfg.run.Torch.Script); err != nil {
		return err.Error()
	}
	if err := scenario.CheckTorch(ctx, cfg.run.Torch); err != nil {
		return err.Error() + " (apt-get install python3-torch)"
	}
	return ""
}

func imagesUnavailable(ctx context.Context, cfg config) string {
	tc := cfg.run.Torch
	tc.ImageFolder = true
	if err := scenario.CheckTorch(ctx, tc); err != nil {
		return err.Error() + " (apt-get install python3-torchvision)"
	}
	return ""
}

func proxyConfig(cfg config) wanproxy.Config {
	pc := cfg.proxy
	pc.Upstream = "MinIO / fake-gcs-server"
	return pc
}

// cacheDisk is the room on the disk of dir (the caches'): free bytes as
// statfs's f_bavail (the cache's floor counts the same way), and whether
// MinIO's data directory is on it. The deleted objects MinIO still keeps
// are purged first: they are room the next pass has.
func cacheDisk(dir, minioDir string) (runner.DiskRoom, error) {
	if err := servers.PurgeMinIOTrash(minioDir); err != nil {
		return runner.DiskRoom{}, fmt.Errorf("purge MinIO's deleted objects: %w", err)
	}
	var st syscall.Statfs_t
	if err := syscall.Statfs(dir, &st); err != nil {
		return runner.DiskRoom{}, err
	}
	d := runner.DiskRoom{Free: int64(st.Bavail) * st.Bsize, Total: int64(st.Blocks) * st.Bsize}
	var a, b syscall.Stat_t
	if syscall.Stat(dir, &a) == nil && syscall.Stat(minioDir, &b) == nil {
		d.BucketHere = a.Dev == b.Dev
	}
	return d, nil
}

func machine() string {
	var uts syscall.Utsname
	_ = syscall.Uname(&uts)
	rel := make([]byte, 0, len(uts.Release))
	for _, c := range uts.Release {
		if c == 0 {
			break
		}
		rel = append(rel, byte(c))
	}
	mem := ""
	if b, err := os.ReadFile("/proc/meminfo"); err == nil {
		if f := strings.Fields(strings.SplitN(string(b), "\n", 2)[0]); len(f) >= 2 {
			if kb, err := strconv.ParseInt(f[1], 10, 64); err == nil {
				mem = fmt.Sprintf(", %.0f GiB RAM", float64(kb)/(1<<20))
			}
		}
	}
	return fmt.Sprintf("%d cores%s, Linux %s, %s", runtime.NumCPU(), mem, rel, runtime.Version())
}

func notes(cfg config) []string {
	out := []string{
		"Cold = the system's persistent cache deleted, fresh mount, page cache dropped (`echo 3 > /proc/sys/vm/drop_caches`). " +
			"Warm = the same mount again. Warm after remount = unmount and mount with the cache kept.",
		"The write phase is timed until every written object is in the bucket (checked directly on the server), " +
			"so a file system that uploads after close() is not flattered.",
		"Every read phase checks the byte count; the cold small-file epoch, the cold checkpoint read and the read-back " +
			"also check file contents (untimed).",
		"All systems share a 2-core machine with the object-store servers and the WAN emulator; " +
			"figures are for comparison within one run, not absolute.",
	}
	if !slices.Contains(cfg.systems, "gcsfuse") {
		return out
	}
	return append(out,
		"gcsfuse's write of 1 GiB shards fails against fake-gcs-server with \"stale file handle\" after minutes "+
			"(also with `--enable-streaming-writes=false`); 64 MiB shards (the quick run) succeed. "+
			"The emulator's resumable uploads of large objects are the suspect, not gcsfuse.")
}

package epoch

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
	"github.com/basin-csi/basin/bench/sut"
	"github.com/basin-csi/basin/bench/wanproxy"
)

// Config is what every node-level scenario is told on its command line.
type Config struct {
	Basin, MinIO, Tools, Work, Out string
	// Command is the command line recorded in the report.
	Command     string
	Quick       bool
	Small, Ckpt dataset.Set
	// Threads read the small files; a checkpoint has one (Threads).
	Threads int
	Timeout time.Duration // of one epoch
	Proxy   wanproxy.Config

	sizes SetSizes
	proxy *wanproxy.Config
}

// Register adds the common flags to fs; work is the default work
// directory.
func (c *Config) Register(fs *flag.FlagSet, work string) {
	home, _ := os.UserHomeDir()
	fs.StringVar(&c.Basin, "basin", "bin/csi-driver", "csi-driver binary")
	fs.StringVar(&c.MinIO, "minio", "minio", "MinIO binary (name or path)")
	fs.StringVar(&c.Tools, "tools", filepath.Join(home, ".cache/basin-tools/bin"), "directory searched first for minio")
	fs.StringVar(&c.Work, "work", work, "work directory: the mounts' caches, and the servers' data (each in a tmpfs mounted there for the run)")
	fs.StringVar(&c.Out, "out", "bench/results", "directory of the report")
	fs.StringVar(&c.Command, "command", "", "command line recorded in the report (default: this one)")
	fs.BoolVar(&c.Quick, "quick", false, "reduced data sets (make bench-quick)")
	c.sizes = SetFlags(fs)
	fs.IntVar(&c.Threads, "threads", 8, "readers of the small-file epochs")
	fs.DurationVar(&c.Timeout, "epoch-timeout", 10*time.Minute, "deadline of one epoch")
	c.proxy = wanproxy.Flags(fs)
}

// Parse parses args with fs (on which Register was called) and completes
// c: the data sets named prefix-small and prefix-ckpt, the binaries'
// paths (csi-driver made absolute, minio looked up), the command line.
func (c *Config) Parse(fs *flag.FlagSet, args []string, prefix string) error {
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	if c.Threads < 1 {
		return fmt.Errorf("-threads %d: want 1 or more", c.Threads)
	}
	c.Proxy = *c.proxy
	var err error
	if c.Small, c.Ckpt, err = c.sizes.Sets(prefix, c.Quick); err != nil {
		return err
	}
	if c.Basin, err = filepath.Abs(c.Basin); err != nil {
		return err
	}
	bin := sut.FindBinary(c.MinIO, c.Tools)
	if bin == "" {
		return fmt.Errorf("minio not found in %s or $PATH (hack/install-tools.sh)", c.Tools)
	}
	c.MinIO = bin
	if c.Command == "" {
		c.Command = fs.Name() + " " + fmt.Sprint(args)
	}
	return nil
}

// WriteReport writes text to <Out>/<date>-name[-quick].md and returns its
// path.
func (c *Config) WriteReport(name, text string) (string, error) {
	name = time.Now().UTC().Format("2006-01-02") + "-" + name
	if c.Quick {
		name += "-quick"
	}
	path := filepath.Join(c.Out, name+".md")
	if err := os.MkdirAll(c.Out, 0o755); err != nil {
		return "", err
	}
	return path, os.WriteFile(path, []byte(text), 0o644)
}

// Main runs a scenario command: run with the arguments, until SIGINT or
// SIGTERM; an error is printed after name and exits 1 (-help exits 0).
func Main(name string, run func(ctx context.Context, args []string) error) {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	err := run(ctx, os.Args[1:])
	stop()
	if err != nil {
		if errors.Is(err, flag.ErrHelp) {
			os.Exit(0)
		}
		fmt.Fprintln(os.Stderr, name+":", err)
		os.Exit(1)
	}
}

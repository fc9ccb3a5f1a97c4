package main

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"github.com/basin-csi/basin/pkg/warmup"
)

const warmupSynopsis = `Usage: csi-driver warmup [flags] PATH...

Reads every file under the PATHs (files or directories of a mounted Basin
volume: a pod's mount or the node's staging path) with parallel workers, so
that the node's cache holds them before a workload asks. With
--metadata-only, only lists and stats them (listings and attributes get
cached, no data).

Progress: a live bar (files, bytes, rate, ETA) when stdout is a terminal,
a plain line every --interval otherwise; a summary at the end.

Resumable: finished files and directories are recorded in a state file
(--state; by default in the user's cache directory, named after the PATHs
and the mode). Run the same command again after an interruption and it
skips what is recorded. A run that completes without errors deletes the
state file, so the next run warms everything again (files still cached are
read locally). --no-state disables it, --restart ignores what it holds.

The cache: a Basin mount answers statfs with its cache's capacity and use
(the numbers of NodeGetVolumeStats). The summary compares the size of the
PATHs with them: "fits", "does NOT fit" (larger than the cache's cap: the
earliest files read were evicted), or "partly evicted" (the cache holds
less than was read). It cannot tell which files were evicted. On other
file systems there is no verdict.

Exit status: 0 when every file was read (even if not all fits: see the
summary), 1 when some could not be read, on an interruption (run it again
to resume) or an error.

Flags:
`

// warmupFlags are the flags of `csi-driver warmup`.
type warmupFlags struct {
	threads      int
	metadataOnly bool
	state        string
	noState      bool
	restart      bool
	interval     time.Duration
	result       string
}

func warmupFlagSet(f *warmupFlags) *flag.FlagSet {
	fs := flag.NewFlagSet("warmup", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.IntVar(&f.threads, "threads", warmup.DefaultThreads, "files read `N` at a time")
	fs.BoolVar(&f.metadataOnly, "metadata-only", false, "list and stat files, read no data")
	fs.StringVar(&f.state, "state", "", "record progress in `FILE` to resume from (default: $XDG_CACHE_HOME/basin/warmup/<hash of PATHs and mode>.state)")
	fs.BoolVar(&f.noState, "no-state", false, "keep no state file (a re-run starts over)")
	fs.BoolVar(&f.restart, "restart", false, "ignore what the state file holds")
	fs.DurationVar(&f.interval, "interval", 10*time.Second, "period of the progress lines when stdout is not a terminal")
	fs.StringVar(&f.result, "result", "", "write the outcome as JSON (files, bytes, bytesPerSecond, errors, fits, verdict) to `FILE` at the end, e.g. a pod's /dev/termination-log")
	return fs
}

func warmupUsage(w io.Writer) {
	var f warmupFlags
	_, _ = fmt.Fprint(w, warmupSynopsis)
	warmupFlagSet(&f).VisitAll(func(fl *flag.Flag) {
		name, usage := flag.UnquoteUsage(fl)
		_, _ = fmt.Fprintf(w, "  %s\n        %s", strings.TrimSpace("--"+fl.Name+" "+name), usage)
		if fl.DefValue != "" && fl.DefValue != "false" {
			_, _ = fmt.Fprintf(w, " (default %s)", fl.DefValue)
		}
		_, _ = fmt.Fprintln(w)
	})
}

// parseWarmupArgs parses the arguments of `csi-driver warmup` (those of
// the Warmup controller's pods among them: warmupctl.PodArgs).
func parseWarmupArgs(args []string) (f warmupFlags, paths []string, err error) {
	paths, err = parseInterspersed(warmupFlagSet(&f), args)
	if err == nil && len(paths) == 0 {
		err = errors.New("missing PATH")
	}
	if err == nil && f.threads < 1 {
		err = fmt.Errorf("--threads %d: want at least 1", f.threads)
	}
	return f, paths, err
}

// runWarmup is `csi-driver warmup`: the command's glue to the warmup
// engine (pkg/warmup), which the Warmup controller's pods run too.
func runWarmup(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	f, paths, err := parseWarmupArgs(args)
	if errors.Is(err, flag.ErrHelp) {
		warmupUsage(stdout)
		return nil
	}
	if err != nil {
		return fmt.Errorf("%w\n(see csi-driver warmup --help)", err)
	}
	opts := warmup.Options{Threads: f.threads, MetadataOnly: f.metadataOnly, Restart: f.restart}
	if !f.noState {
		if opts.StateFile, err = stateFileFor(f.state, paths, f.metadataOnly); err != nil {
			return err
		}
	}
	report := newProgressReporter(stdout, f.interval)
	opts.Progress, opts.ProgressInterval = report.update, report.tick
	res, err := warmup.Run(ctx, paths, opts)
	report.finish()
	printSummary(stdout, res, opts.StateFile)
	if f.result != "" {
		if werr := res.Report(err).WriteFile(f.result); werr != nil {
			return errors.Join(err, werr)
		}
	}
	switch {
	case errors.Is(err, context.Canceled) && opts.StateFile != "":
		return fmt.Errorf("interrupted; run the same command again to resume (state file %s)", opts.StateFile)
	case err != nil:
		return err
	case res.Errors > 0:
		return fmt.Errorf("%d files or directories could not be read", res.Errors)
	}
	return nil
}

// parseInterspersed parses flags placed anywhere among the arguments.
func parseInterspersed(fs *flag.FlagSet, args []string) ([]string, error) {
	var positional []string
	for {
		if err := fs.Parse(args); err != nil {
			return nil, err
		}
		args = fs.Args()
		if len(args) == 0 {
			return positional, nil
		}
		positional = append(positional, args[0])
		args = args[1:]
	}
}

// stateFileFor returns the state file: explicit, or one in the user's
// cache directory named after the absolute paths and the mode.
func stateFileFor(explicit string, paths []string, metadataOnly bool) (string, error) {
	if explicit != "" {
		return filepath.Abs(explicit)
	}
	base, err := os.UserCacheDir()
	if err != nil {
		return "", fmt.Errorf("no --state given and no user cache directory (%w); use --state FILE or --no-state", err)
	}
	abs := make([]string, 0, len(paths))
	for _, p := range paths {
		a, err := filepath.Abs(p)
		if err != nil {
			return "", err
		}
		abs = append(abs, a)
	}
	slices.Sort(abs)
	sum := sha256.Sum256([]byte(fmt.Sprint(metadataOnly, "\x00", strings.Join(abs, "\x00"))))
	return filepath.Join(base, "basin", "warmup", hex.EncodeToString(sum[:12])+".state"), nil
}

// printSummary writes the end of a run: what was warmed, what failed, and
// how it compares with the cache.
func printSummary(w io.Writer, res warmup.Result, stateFile string) {
	verb, amount := "read", warmup.FormatBytes(res.Bytes)
	if res.MetadataOnly {
		verb, amount = "stat'ed", "sizes "+amount
	}
	_, _ = fmt.Fprintf(w, "warmup: %s %d files (%s) in %s", verb, res.Files, amount, res.Elapsed.Round(100*time.Millisecond))
	if !res.MetadataOnly && res.Elapsed > 0 {
		_, _ = fmt.Fprintf(w, ", %s/s", warmup.FormatBytes(int64(res.Rate())))
	}
	_, _ = fmt.Fprintf(w, "; %d directories; %d errors\n", res.Dirs, res.Errors)
	if res.SkippedFiles > 0 {
		_, _ = fmt.Fprintf(w, "warmup: skipped %d files (%s) an earlier run warmed (state file %s)\n",
			res.SkippedFiles, warmup.FormatBytes(res.SkippedBytes), stateFile)
	}
	if res.StateNote != "" {
		_, _ = fmt.Fprintln(w, "warmup:", res.StateNote)
	}
	for _, f := range res.Failures {
		_, _ = fmt.Fprintf(w, "warmup: failed: %s: %v\n", f.Path, f.Err)
	}
	if n := res.Errors - int64(len(res.Failures)); n > 0 {
		_, _ = fmt.Fprintf(w, "warmup: ... and %d more failures\n", n)
	}
	c := res.Cache
	if c.Known {
		capacity := warmup.FormatBytes(c.After.Capacity)
		if c.After.Uncapped {
			capacity = "no cap"
		}
		_, _ = fmt.Fprintf(w, "warmup: cache (statfs of the mount): %s used before, %s after, capacity %s\n",
			warmup.FormatBytes(c.Before.Used), warmup.FormatBytes(c.After.Used), capacity)
	}
	prefix := "warmup: cache: "
	if !c.Fits && c.Known {
		prefix = "warmup: WARNING: cache: "
	}
	_, _ = fmt.Fprintln(w, prefix+c.Verdict)
}

// progressReporter shows progress: a bar redrawn in place on a terminal,
// plain lines otherwise.
type progressReporter struct {
	// constant
	w    io.Writer
	tty  bool
	tick time.Duration // how often Run calls update: the bar's redraw or the line's period

	drawn bool // only Run's goroutine (update), then finish, touch it
}

func newProgressReporter(w io.Writer, every time.Duration) *progressReporter {
	r := &progressReporter{w: w, tty: isTerminal(w), tick: every}
	if r.tty {
		r.tick = 200 * time.Millisecond
	}
	return r
}

// update is warmup.Options.Progress.
func (r *progressReporter) update(p warmup.Progress) {
	switch {
	case p.Done:
		// the summary follows
	case r.tty:
		_, _ = fmt.Fprintf(r.w, "\r\x1b[K%s", p.Bar(32))
		r.drawn = true
	default:
		_, _ = fmt.Fprintf(r.w, "warmup: %s\n", p.Line())
	}
}

// finish ends the bar's line.
func (r *progressReporter) finish() {
	if r.drawn {
		_, _ = fmt.Fprintln(r.w)
	}
}

// isTerminal reports whether w is a terminal.
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	_, err := unix.IoctlGetTermios(int(f.Fd()), unix.TCGETS)
	return err == nil
}

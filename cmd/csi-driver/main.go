// Command csi-driver is Basin's single binary. Its subcommands are the CSI
// controller and node plugins, the per-volume FUSE cache process (mount),
// and tools.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"sort"
	"syscall"
)

// version is set at build time with -ldflags "-X main.version=...".
var version = "dev"

// command is one subcommand.
type command struct {
	summary string
	run     func(ctx context.Context, args []string, stdout, stderr io.Writer) error
}

// commands lists the subcommands; each lives in its own file.
func commands() map[string]command {
	return map[string]command{
		"mount":      {summary: "mount a bucket with a local cache (FUSE); see mount --help", run: runMount},
		"controller": {summary: "serve the CSI controller (CreateVolume, DeleteVolume); see controller --help", run: runController},
		"node":       {summary: "serve the CSI node plugin (stage, publish, heal FUSE mounts); see node --help", run: runNode},
		"fdholder":   {summary: "hold the node's FUSE connections across node plugin restarts; see fdholder --help", run: runFDHolder},
		"cache":      {summary: "inspect volume caches on this node: stats, ls, verify, gc; see cache --help", run: runCache},
		"demo":       {summary: "generate a local-directory bucket, mount it with a cache, read it cold then warm", run: runDemo},
		"warmup":     {summary: "read paths of a mounted volume so the node's cache holds them; see warmup --help", run: runWarmup},
		"version":    {summary: "print the version", run: runVersion},
	}
}

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	os.Exit(dispatch(ctx, os.Args[1:], os.Stdout, os.Stderr))
}

func dispatch(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	cmds := commands()
	if len(args) == 0 || args[0] == "help" || args[0] == "-h" || args[0] == "--help" {
		usage(stdout, cmds)
		if len(args) == 0 {
			return 2
		}
		return 0
	}
	c, ok := cmds[args[0]]
	if !ok {
		_, _ = fmt.Fprintf(stderr, "csi-driver: unknown command %q\n", args[0])
		usage(stderr, cmds)
		return 2
	}
	if err := c.run(ctx, args[1:], stdout, stderr); err != nil {
		_, _ = fmt.Fprintf(stderr, "csi-driver %s: %v\n", args[0], err)
		var coded interface{ ExitCode() int }
		if errors.As(err, &coded) {
			return coded.ExitCode()
		}
		return 1
	}
	return 0
}

func usage(w io.Writer, cmds map[string]command) {
	_, _ = fmt.Fprintf(w, "Basin %s: object-storage buckets as POSIX volumes with a node-local cache.\n\nUsage: csi-driver <command> [flags]\n\nCommands:\n", version)
	names := make([]string, 0, len(cmds))
	for n := range cmds {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		_, _ = fmt.Fprintf(w, "  %-10s %s\n", n, cmds[n].summary)
	}
}

func runVersion(_ context.Context, _ []string, stdout, _ io.Writer) error {
	_, _ = fmt.Fprintln(stdout, version)
	return nil
}

package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"

	"k8s.io/klog/v2"

	"github.com/basin-csi/basin/pkg/fdholder"
)

// runFDHolder is `csi-driver fdholder`: hold duplicates of the node's
// /dev/fuse descriptors handed over by the node plugin until SIGTERM, so
// that restarting the node plugin does not end its FUSE connections.
func runFDHolder(ctx context.Context, args []string, _, stderr io.Writer) error {
	fs := flag.NewFlagSet("fdholder", flag.ContinueOnError)
	fs.SetOutput(stderr)
	socket := fs.String("socket", fdholder.DefaultSocket, "unix `socket` to listen on (its directory is made 0700)")
	klog.InitFlags(fs)
	fs.Usage = func() {
		_, _ = fmt.Fprint(stderr, "Usage: csi-driver fdholder [flags]\n\n"+
			"Holds a duplicate of every FUSE connection's /dev/fuse descriptor that the node plugin\n"+
			"(csi-driver node --fdholder-socket) hands over, and hands them back to a restarted node\n"+
			"plugin, which takes the connections over: pods see a pause, not an error. Run it in a\n"+
			"DaemonSet of its own that is rarely updated; when it restarts, the node plugin hands it\n"+
			"every descriptor again.\n\nFlags:\n")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return nil
		}
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	defer klog.Flush()
	lis, err := fdholder.Listen(*socket)
	if err != nil {
		return err
	}
	s := fdholder.NewServer()
	klog.InfoS("holding FUSE connections", "socket", *socket)
	// The descriptors are released by the process's exit.
	return s.Serve(ctx, lis)
}

// Command nodestub serves drivertest.NodeStub, a CSI Node service that has
// no volumes, on a unix socket. tests/sanity/run.sh points csi-sanity's
// node endpoint at it so the Controller specs can run against the real
// `csi-driver controller` binary: sanity's cleanup calls the node service
// for every volume it created. It is a test tool, never a node plugin.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/basin-csi/basin/pkg/driver"
	"github.com/basin-csi/basin/pkg/driver/drivertest"
)

func main() {
	endpoint := flag.String("endpoint", "", "unix:///path/to/node.sock")
	nodeID := flag.String("node-id", "sanity-node", "node ID for NodeGetInfo")
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	lis, err := driver.Listen(*endpoint)
	if err == nil {
		err = drivertest.ServeNodeStub(ctx, lis, *nodeID)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "nodestub:", err)
		os.Exit(1)
	}
}

package driver

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/basin-csi/basin/internal/testserver"
	"github.com/basin-csi/basin/pkg/supervisor"
)

// needFUSE fails (CI) or skips unless the test can mount FUSE as root.
func needFUSE(t *testing.T) string {
	t.Helper()
	testserver.RequireFUSE(t)
	bin, err := testserver.CSIDriver()
	if err != nil {
		t.Fatalf("build csi-driver: %v", err)
	}
	return bin
}

// nodeHarness is a real Node served on a unix socket.
type nodeHarness struct {
	dir      string // root of staging/target/cache/state paths
	node     *Node
	client   csi.NodeClient
	identity csi.IdentityClient
	endpoint string
	cfg      NodeConfig
}

// startNode serves a real node (real FUSE processes) until the test ends;
// cleanup unmounts everything under its directory even on failure.
func startNode(t *testing.T, tune func(*NodeConfig)) *nodeHarness {
	t.Helper()
	bin := needFUSE(t)
	dir, err := os.MkdirTemp("", "basin-node-")
	if err != nil {
		t.Fatal(err)
	}
	h := &nodeHarness{dir: dir}
	h.cfg = NodeConfig{
		NodeID: "test-node", CacheRoot: filepath.Join(dir, "cache"), StateFile: filepath.Join(dir, "state", "node.json"),
		SharesDir:   filepath.Join(dir, "shares"),
		MountBinary: bin,
		Supervisor:  supervisor.Config{CheckInterval: 200 * time.Millisecond, CheckTimeout: 2 * time.Second, StopTimeout: 3 * time.Second},
	}
	if tune != nil {
		tune(&h.cfg)
	}
	t.Cleanup(func() { cleanupMounts(t, dir) })
	h.serve(t)
	return h
}

// serve starts (or restarts) the node of h.
func (h *nodeHarness) serve(t *testing.T) {
	t.Helper()
	n, err := NewNode(t.Context(), h.cfg)
	if err != nil {
		t.Fatal(err)
	}
	h.node = n
	h.endpoint = "unix://" + filepath.Join(h.dir, "csi-"+strconv.Itoa(time.Now().Nanosecond())+".sock")
	d, err := New(Config{Endpoint: h.endpoint, Version: "test", NodeID: "test-node"}, n)
	if err != nil {
		t.Fatal(err)
	}
	lis, err := Listen(h.endpoint)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- d.Serve(ctx, lis) }()
	conn, err := grpc.NewClient(h.endpoint, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	h.client = csi.NewNodeClient(conn)
	h.identity = csi.NewIdentityClient(conn)
	t.Cleanup(func() {
		_ = conn.Close()
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Serve after cancel: %v", err)
		}
		n.Close()
	})
}

// waitReady polls Probe until the node is ready: it took back the volumes
// of its state.
func (h *nodeHarness) waitReady(t *testing.T) {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for {
		p, err := h.identity.Probe(t.Context(), &csi.ProbeRequest{})
		if err != nil {
			t.Fatalf("Probe: %v", err)
		}
		if p.GetReady().GetValue() {
			return
		}
		if time.Now().After(deadline) {
			t.Fatal("the node is not ready after 60s")
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// cleanupMounts lazily unmounts every mount under dir (deepest first) and
// kills FUSE processes serving caches under it, then removes dir.
func cleanupMounts(t *testing.T, dir string) {
	b, err := os.ReadFile("/proc/self/mountinfo")
	if err == nil {
		var points []string
		for _, line := range strings.Split(string(b), "\n") {
			f := strings.Fields(line)
			if len(f) > 4 && len(f[4]) >= len(dir) && f[4][:len(dir)] == dir {
				points = append(points, f[4])
			}
		}
		for i := len(points) - 1; i >= 0; i-- {
			_ = syscall.Unmount(points[i], syscall.MNT_DETACH)
		}
	}
	_ = supervisor.ReapProcsUnder(context.Background(), filepath.Join(dir, "cache"))
	if err := os.RemoveAll(dir); err != nil && !errors.Is(err, os.ErrNotExist) {
		t.Logf("cleanup: %v", err)
	}
}

package e2e

import (
	"context"
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
	"github.com/basin-csi/basin/pkg/driver"
	"github.com/basin-csi/basin/pkg/supervisor"
)

func TestMain(m *testing.M) {
	code := m.Run()
	testserver.Shutdown()
	os.Exit(code)
}

// plugin is a controller and a node plugin served on one unix socket, with
// clients as kubelet and csi-provisioner use them.
type plugin struct {
	dir        string
	cacheRoot  string
	controller csi.ControllerClient
	node       csi.NodeClient
	identity   csi.IdentityClient
}

// startPlugin serves the plugin until the test ends. Cleanup detaches
// every mount under its directory and stops its FUSE processes, even when
// the test failed.
func startPlugin(t *testing.T) *plugin {
	t.Helper()
	testserver.RequireFUSE(t)
	bin, err := testserver.CSIDriver()
	if err != nil {
		t.Fatalf("build csi-driver: %v", err)
	}
	dir, err := os.MkdirTemp("", "basin-e2e-") // short: socket path limit
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cleanup(t, dir) })
	p := &plugin{dir: dir, cacheRoot: filepath.Join(dir, "cache")}
	endpoint := "unix://" + filepath.Join(dir, "csi.sock")

	ctrl, err := driver.NewController(driver.ControllerConfig{})
	if err != nil {
		t.Fatal(err)
	}
	node, err := driver.NewNode(t.Context(), driver.NodeConfig{
		NodeID: "e2e-node", CacheRoot: p.cacheRoot, StateFile: filepath.Join(dir, "node", "state.json"), MountBinary: bin,
		Supervisor: supervisor.Config{CheckInterval: 250 * time.Millisecond, CheckTimeout: 3 * time.Second},
	})
	if err != nil {
		t.Fatal(err)
	}
	d, err := driver.New(driver.Config{Endpoint: endpoint, NodeID: "e2e-node", Version: "e2e"}, ctrl, node)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- d.Run(ctx) }()
	conn, err := grpc.NewClient(endpoint, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = conn.Close()
		cancel()
		if err := <-done; err != nil {
			t.Errorf("driver: %v", err)
		}
		node.Close()
	})
	p.controller, p.node, p.identity = csi.NewControllerClient(conn), csi.NewNodeClient(conn), csi.NewIdentityClient(conn)
	return p
}

// cleanup detaches the mounts under dir (deepest first), stops FUSE
// processes serving caches under it and removes it.
func cleanup(t *testing.T, dir string) {
	if b, err := os.ReadFile("/proc/self/mountinfo"); err == nil {
		var points []string
		for _, line := range strings.Split(string(b), "\n") {
			if f := strings.Fields(line); len(f) > 4 && strings.HasPrefix(f[4], dir+"/") {
				points = append(points, f[4])
			}
		}
		for i := len(points) - 1; i >= 0; i-- {
			_ = syscall.Unmount(points[i], syscall.MNT_DETACH)
		}
	}
	if err := supervisor.ReapProcsUnder(context.Background(), filepath.Join(dir, "cache")); err != nil {
		t.Logf("cleanup: %v", err)
	}
	_ = os.RemoveAll(dir)
}

// fusePids lists the FUSE processes serving caches under the plugin's
// cache root (what a kubectl exec + ps would show).
func (p *plugin) fusePids(t *testing.T) []int {
	t.Helper()
	entries, err := os.ReadDir("/proc")
	if err != nil {
		t.Fatal(err)
	}
	var pids []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err == nil && strings.Contains(string(b), "\x00mount\x00") && strings.Contains(string(b), "\x00"+p.cacheRoot+"/") {
			if st, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat")); err == nil && !strings.Contains(string(st), ") Z") {
				pids = append(pids, pid)
			}
		}
	}
	return pids
}

package main

import (
	"context"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
)

// freeAddr returns a loopback address nobody listens on (for a moment).
func freeAddr(t *testing.T) string {
	t.Helper()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = lis.Close() }()
	return lis.Addr().String()
}

// TestControllerMetrics runs the controller with --metrics-address and
// checks that its CSI calls show up at /metrics.
func TestControllerMetrics(t *testing.T) {
	dir, err := os.MkdirTemp("", "basin-ctl-")
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = os.RemoveAll(dir) }()
	sock, addr := filepath.Join(dir, "csi.sock"), freeAddr(t)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- runController(ctx, []string{"--endpoint", "unix://" + sock, "--metrics-address", addr}, io.Discard, io.Discard)
	}()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("runController: %v", err)
		}
	}()
	conn, err := grpc.NewClient("unix://"+sock, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = conn.Close() }()
	ids := csi.NewIdentityClient(conn)
	waitFor(t, "the controller", func() bool {
		_, err := ids.GetPluginInfo(ctx, &csi.GetPluginInfoRequest{})
		return err == nil
	})
	var body string
	waitFor(t, "metrics", func() bool {
		resp, err := http.Get("http://" + addr + "/metrics")
		if err != nil {
			return false
		}
		defer func() { _ = resp.Body.Close() }()
		b, _ := io.ReadAll(resp.Body)
		body = string(b)
		return resp.StatusCode == 200
	})
	for _, want := range []string{
		`basin_csi_operations_total{code="OK",method="GetPluginInfo"}`,
		`basin_build_info{version="` + version + `"} 1`,
		"go_goroutines ",
		"process_resident_memory_bytes ",
	} {
		if !strings.Contains(body, want) {
			t.Errorf("controller metrics lack %s", want)
		}
	}
}

func TestMetricsAddressInUse(t *testing.T) {
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = lis.Close() }()
	dir, err := os.MkdirTemp("", "basin-ctl-")
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = os.RemoveAll(dir) }()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	err = runController(ctx, []string{"--endpoint", "unix://" + filepath.Join(dir, "csi.sock"), "--metrics-address", lis.Addr().String()}, io.Discard, io.Discard)
	if err == nil || !strings.Contains(err.Error(), "metrics") {
		t.Errorf("metrics address in use: %v, want an error", err)
	}
}

func TestNodeMetricsFlag(t *testing.T) {
	c, err := parseNodeArgs([]string{"--node-id", "n", "--mount-binary", "/bin/true", "--metrics-address", ":9810"}, io.Discard)
	if err != nil || c.MetricsAddress != ":9810" {
		t.Errorf("--metrics-address: %+v, %v", c, err)
	}
	if c, _ := parseNodeArgs([]string{"--node-id", "n", "--mount-binary", "/bin/true"}, io.Discard); c.MetricsAddress != "" {
		t.Errorf("metrics on by default at %q", c.MetricsAddress)
	}
}

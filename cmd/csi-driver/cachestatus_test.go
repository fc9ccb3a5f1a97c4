package main

import (
	"context"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/basin-csi/basin/pkg/cachestatus"
)

// TestCacheStatusFlags: the reporter is off unless asked for (node
// plugins outside Kubernetes have no API server), and its interval must
// be positive.
func TestCacheStatusFlags(t *testing.T) {
	base := []string{"--node-id", "n", "--mount-binary", "/bin/true"}
	c, err := parseNodeArgs(base, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if c.CacheStatus.Enabled || c.CacheStatus.Interval != cachestatus.DefaultInterval {
		t.Errorf("defaults: %+v, want off every %v", c.CacheStatus, cachestatus.DefaultInterval)
	}
	c, err = parseNodeArgs(append(base, "--report-cache-status", "--cache-status-interval=10s", "--kubeconfig=/k"), io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if want := (cacheStatusConfig{Enabled: true, Interval: 10 * time.Second, Kubeconfig: "/k"}); c.CacheStatus != want {
		t.Errorf("parsed %+v, want %+v", c.CacheStatus, want)
	}
	if _, err := parseNodeArgs(append(base, "--cache-status-interval=0s"), io.Discard); err == nil {
		t.Error("--cache-status-interval=0s accepted")
	}
}

// TestCacheStatusWithoutAPIServer: with nothing listening where the API
// server should be, Trigger never blocks and the reporter stops with its
// context.
func TestCacheStatusWithoutAPIServer(t *testing.T) {
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := lis.Addr().String()
	_ = lis.Close() // a port nothing listens on
	kubeconfig := filepath.Join(t.TempDir(), "kubeconfig")
	cfg := fmt.Sprintf("apiVersion: v1\nkind: Config\nclusters: [{name: c, cluster: {server: \"http://%s\"}}]\n"+
		"users: [{name: u, user: {}}]\ncontexts: [{name: c, context: {cluster: c, user: u}}]\ncurrent-context: c\n", addr)
	if err := os.WriteFile(kubeconfig, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	rep, run, err := newCacheStatus(cacheStatusConfig{Enabled: true, Interval: 50 * time.Millisecond, Kubeconfig: kubeconfig},
		"n", "basin.csi.dev", t.TempDir(), nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); run(ctx) }()
	triggered := make(chan struct{})
	go func() {
		defer close(triggered)
		for range 1000 {
			rep.Trigger()
		}
	}()
	select {
	case <-triggered:
	case <-time.After(5 * time.Second):
		t.Fatal("Trigger blocked")
	}
	cancel()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("the reporter did not stop with its context")
	}
}

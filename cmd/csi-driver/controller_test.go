package main

import (
	"context"
	"errors"
	"flag"
	"io"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/basin-csi/basin/pkg/driver"
	"github.com/basin-csi/basin/pkg/orchestrator"
)

func TestParseControllerArgs(t *testing.T) {
	c, err := parseControllerArgs(nil, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if c.Driver.Endpoint != driver.DefaultEndpoint || c.Driver.Name != driver.DefaultName || c.Controller.RequireSecret || c.Driver.Version != version {
		t.Errorf("defaults: %+v", c)
	}
	c, err = parseControllerArgs([]string{"--endpoint", "unix:///run/x.sock", "--node-id", "n1", "--require-secret", "-v=4"}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if c.Driver.Endpoint != "unix:///run/x.sock" || c.Driver.NodeID != "n1" || !c.Controller.RequireSecret {
		t.Errorf("flags not applied: %+v", c)
	}
	if c.Orchestrator.Off != (orchestrator.Components{}) {
		t.Errorf("components off by default: %+v", c.Orchestrator.Off)
	}
	c, err = parseControllerArgs([]string{"--orchestrate", "--namespace=ns", "--placement-webhook=false", "--warmup-controller=false"}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if !c.Orchestrator.Off.Placement || !c.Orchestrator.Off.Warmup {
		t.Errorf("--placement-webhook=false --warmup-controller=false: off = %+v", c.Orchestrator.Off)
	}
	c, err = parseControllerArgs([]string{"--orchestrate", "--namespace=ns", "--warmup-controller=false", "--warmup-controller"}, io.Discard)
	if err != nil || c.Orchestrator.Off.Warmup {
		t.Errorf("--warmup-controller after =false: off = %+v, err %v", c.Orchestrator.Off, err)
	}
	if _, err := parseControllerArgs([]string{"--help"}, io.Discard); !errors.Is(err, flag.ErrHelp) {
		t.Errorf("--help: %v", err)
	}
	for _, bad := range [][]string{{"--no-such-flag"}, {"positional"}, {"--placement-webhook=maybe"}} {
		if _, err := parseControllerArgs(bad, io.Discard); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}

// The controller serves on its socket until its context ends (SIGTERM in
// main), then returns cleanly.
func TestRunControllerServesUntilCancelled(t *testing.T) {
	dir, err := os.MkdirTemp("", "basin-ctl-")
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = os.RemoveAll(dir) }()
	sock := filepath.Join(dir, "csi.sock")
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- runController(ctx, []string{"--endpoint", "unix://" + sock}, io.Discard, io.Discard) }()
	deadline := time.Now().Add(10 * time.Second)
	for {
		conn, err := net.Dial("unix", sock)
		if err == nil {
			_ = conn.Close()
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("controller socket never accepted: %v", err)
		}
		time.Sleep(20 * time.Millisecond)
	}
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("runController: %v", err)
		}
	case <-time.After(15 * time.Second):
		t.Fatal("runController did not return after cancel")
	}
	if err := runController(context.Background(), []string{"--endpoint", "tcp://127.0.0.1:1"}, io.Discard, io.Discard); err == nil {
		t.Error("a tcp endpoint was accepted")
	}
}

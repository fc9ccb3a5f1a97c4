package main

import (
	"io"
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

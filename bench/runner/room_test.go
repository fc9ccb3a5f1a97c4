package runner

import (
	"context"
	"strings"
	"testing"

	"github.com/basin-csi/basin/bench/report"
	"github.com/basin-csi/basin/bench/sut"
	"github.com/basin-csi/basin/bench/sut/suttest"
)

// TestCacheDiskTooFullIsNotPlayed: a system whose cache disk would fall
// below the cache's free-space floor is not played, and its cells say
// why; with room, or for the local directory or a direct client (no
// cache), it is.
func TestCacheDiskTooFullIsNotPlayed(t *testing.T) {
	cfg := testConfig()
	const total = int64(100e9)
	floor := total * 5 / 100
	for _, tc := range []struct {
		name    string
		free    int64
		backend sut.Backend
		client  bool
		played  bool
	}{
		{"room", floor + cfg.roomNeeded(true), sut.BackendS3, false, true},
		{"full", floor + cfg.roomNeeded(true) - 1, sut.BackendS3, false, false},
		{"full, local", floor, sut.BackendLocal, false, true},
		{"full, client", floor, sut.BackendS3, true, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			root := populated(t, cfg)
			var l hookLog
			h := hooks(&l)
			h.CacheDisk = func() (DiskRoom, error) { return DiskRoom{Free: tc.free, Total: total, BucketHere: true}, nil }
			r, err := New(cfg, h)
			if err != nil {
				t.Fatal(err)
			}
			var sys sut.System = suttest.New("fake", root, tc.backend)
			if tc.client {
				c, err := suttest.NewClient("fake", root, tc.backend)
				if err != nil {
					t.Fatal(err)
				}
				sys = c
			}
			rows, _ := r.Run(context.Background(), []sut.System{sys})
			c := cell(t, rows, ckptCold, "fake")
			refused := c.Status == report.Failed && strings.Contains(c.Reason, "free-space floor")
			if refused == tc.played {
				t.Errorf("free %d of %d: cell %+v, played %v", tc.free, total, c, tc.played)
			}
		})
	}
	if cfg.roomNeeded(false) >= cfg.roomNeeded(true) {
		t.Errorf("a bucket elsewhere needs %d bytes, not less than one on the disk (%d)", cfg.roomNeeded(false), cfg.roomNeeded(true))
	}
}

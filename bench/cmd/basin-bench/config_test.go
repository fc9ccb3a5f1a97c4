package main

import (
	"errors"
	"io"
	"slices"
	"testing"
	"time"

	"github.com/basin-csi/basin/bench/runner"
)

func TestParseFlags(t *testing.T) {
	tests := []struct {
		name  string
		args  []string
		check func(t *testing.T, c config)
	}{
		{"defaults are the full run", nil, func(t *testing.T, c config) {
			if c.mode != "full" || c.run.Sets.Small.Files != 20000 || c.run.Sets.Checkpoint.FileSize != 1<<30 ||
				c.run.Sets.Tree.Files != 100000 || c.run.PhaseTimeout != 5*time.Minute {
				t.Errorf("full preset: %+v", c.run)
			}
			if !slices.Equal(c.systems, allSystems()) || c.basinBin != "/var/tmp/basin-bench/bin/csi-driver" {
				t.Errorf("systems %v basin %s", c.systems, c.basinBin)
			}
			if c.proxy.TTFB != 30*time.Millisecond || c.proxy.ConnBandwidth != 60e6 || c.proxy.TotalBandwidth != 1.2e9 {
				t.Errorf("proxy %+v", c.proxy)
			}
		}},
		{"quick with overrides", []string{"--quick", "-small-files", "50", "-ckpt-size", "4194304", "-systems", "rclone, local", "-conn-mbps", "0"}, func(t *testing.T, c config) {
			if c.mode != "quick" || c.run.Sets.Small.Files != 50 || c.run.Sets.Checkpoint.FileSize != 4<<20 ||
				c.run.Sets.Tree.Files != 250 || c.run.PhaseTimeout != time.Minute {
				t.Errorf("quick preset: %+v", c.run)
			}
			if !slices.Equal(c.systems, []string{"rclone", "local"}) || c.proxy.ConnBandwidth != 0 {
				t.Errorf("systems %v proxy %+v", c.systems, c.proxy)
			}
			if c.command != "basin-bench --quick -small-files 50 -ckpt-size 4194304 -systems rclone, local -conn-mbps 0" {
				t.Errorf("command %q", c.command)
			}
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c, err := parseFlags(tc.args, io.Discard)
			if err != nil {
				t.Fatal(err)
			}
			tc.check(t, c)
		})
	}
}

func TestParseFlagsErrors(t *testing.T) {
	tests := []struct {
		name string
		args []string
		want error
	}{
		{"random read larger than a shard", []string{"-quick", "-ckpt-size", "4096"}, runner.ErrInvalidConfig},
		{"unknown system", []string{"-systems", "juicefs"}, nil},
		{"stray argument", []string{"extra"}, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := parseFlags(tc.args, io.Discard)
			if err == nil || tc.want != nil && !errors.Is(err, tc.want) {
				t.Fatalf("err = %v, want %v", err, tc.want)
			}
		})
	}
}

package main

import (
	"testing"
	"time"
)

func TestParseFlags(t *testing.T) {
	c, err := parseFlags([]string{"-conn-mbps", "30", "-ttfb", "5ms", "-rounds", "3", "-download-to-file",
		"-basin-flag=--read-ahead=64Mi", "-basin-flag=--max-parallel-fetches=4", "-parallel", "8,32", "-bin", "a=/x/a", "-bin", "b=/x/b --read-ahead=1Gi"})
	if err != nil {
		t.Fatal(err)
	}
	if c.proxy.ConnBandwidth != 30e6 || c.proxy.TTFB != 5*time.Millisecond || c.rounds != 3 || !c.toFile || c.bucketOnDisk {
		t.Errorf("parsed %+v", c)
	}
	if len(c.basinFlags) != 2 || c.basinFlags[1] != "--max-parallel-fetches=4" {
		t.Errorf("basin flags %q", c.basinFlags)
	}
	if len(c.parallel) != 2 || c.parallel[1] != 32 || len(c.bins) != 2 || c.bins[1].label != "b" || c.bins[1].bin != "/x/b" || len(c.bins[1].flags) != 1 {
		t.Errorf("parallel %v, bins %v", c.parallel, c.bins)
	}
	for _, bad := range [][]string{{"-rounds", "0"}, {"-conn-mbps", "-1"}, {"-size", "0"}, {"-parallel", "8,x"}, {"-files", "0"}, {"-bin", "noequals"}} {
		if _, err := parseFlags(bad); err == nil {
			t.Errorf("parseFlags(%q) accepted", bad)
		}
	}
}

func TestMedian(t *testing.T) {
	for _, tc := range []struct {
		in   []float64
		want float64
	}{{[]float64{1}, 1}, {[]float64{1, 2, 4}, 2}, {[]float64{1, 2, 4, 8}, 3}} {
		if got := median(tc.in); got != tc.want {
			t.Errorf("median(%v) = %v, want %v", tc.in, got, tc.want)
		}
	}
}

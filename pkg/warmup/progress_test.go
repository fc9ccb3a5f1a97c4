package warmup

import (
	"strings"
	"testing"
	"time"
)

func TestFormatBytes(t *testing.T) {
	for n, want := range map[int64]string{0: "0 B", 1023: "1023 B", 1024: "1.0 KiB", 1536: "1.5 KiB", 3 << 30: "3.0 GiB", 5 << 40: "5.0 TiB"} {
		if got := FormatBytes(n); got != want {
			t.Errorf("FormatBytes(%d) = %q, want %q", n, got, want)
		}
	}
}

func TestProgressFormat(t *testing.T) {
	listing := Progress{Elapsed: 2 * time.Second, Files: 10, Bytes: 20 << 20, FoundFiles: 50, FoundBytes: 100 << 20}
	half := listing
	half.WalkDone = true
	meta := Progress{Elapsed: time.Second, Files: 300, FoundFiles: 1000, WalkDone: true, MetadataOnly: true}
	resumed := Progress{Elapsed: time.Second, Files: 1, Bytes: 10, SkippedFiles: 3, SkippedBytes: 30, FoundFiles: 4, FoundBytes: 40, WalkDone: true}
	cases := []struct {
		name  string
		p     Progress
		line  []string // substrings of Line
		eta   time.Duration
		etaOK bool
	}{
		{"still listing", listing, []string{"10/50+ files", "20.0 MiB of 100.0 MiB+", "10.0 MiB/s", "still listing", "0 errors"}, 0, false},
		{"half way", half, []string{"20% ", "10/50 files", "ETA 8s"}, 8 * time.Second, true},
		{"metadata only", meta, []string{"30% ", "300/1000 files stat'ed", "300 files/s", "ETA 2s"}, 2 * time.Second, true},
		{"resumed: skipped files count as done", resumed, []string{"100% ", "4/4 files", "40 B of 40 B"}, 0, true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			line := c.p.Line()
			for _, s := range c.line {
				if !strings.Contains(line, s) {
					t.Errorf("Line() = %q, lacks %q", line, s)
				}
			}
			eta, ok := c.p.ETA()
			if eta != c.eta || ok != c.etaOK {
				t.Errorf("ETA() = %v, %v; want %v, %v", eta, ok, c.eta, c.etaOK)
			}
			bar := c.p.Bar(12)
			if !strings.HasPrefix(bar, "[") || strings.Index(bar, "] ") != 11 {
				t.Errorf("Bar(12) = %q, want a 12-character bar first", bar)
			}
		})
	}
	if got := half.Bar(12); !strings.HasPrefix(got, "[==>       ]") {
		t.Errorf("Bar at 20%% = %q", got)
	}
}

package report

import (
	"bytes"
	"image/png"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/basin-csi/basin/bench/dataset"
	"github.com/basin-csi/basin/bench/scenario"
	"github.com/basin-csi/basin/bench/wanproxy"
)

func sample() *Report {
	sec := time.Second
	return &Report{
		Mode:     "quick",
		Command:  "bench/run.sh --quick",
		Machine:  "2 cores",
		Started:  time.Date(2026, 7, 1, 10, 0, 0, 0, time.UTC),
		Finished: time.Date(2026, 7, 1, 10, 4, 0, 0, time.UTC),
		Proxy:    wanproxy.DefaultConfig("http://127.0.0.1:1"),
		Sets:     []dataset.Set{dataset.Small(100, 128<<10, 10), dataset.Checkpoint(2, 64<<20), dataset.Tree(500, 5, 2)},
		Systems: []System{
			{Name: Basin, Command: "csi-driver mount ..."},
			{Name: "rclone", Command: "rclone mount ...", PeakRSS: 100 << 20},
			{Name: "gcsfuse", Command: "gcsfuse ...", Unavailable: "gcsfuse not found"},
			{Name: Ceiling, Command: "plain directory"},
		},
		Rows: []Row{
			{Scenario: "small-file epoch", Phase: "cold", Unit: FilesPerSec, Cells: map[string]Cell{
				Basin:     {Status: OK, Measure: scenario.Measure{Files: 900, Elapsed: sec}},
				"rclone":  {Status: Partial, Measure: scenario.Measure{Files: 45, Elapsed: sec}, PeakRSS: 90<<20 - 1<<19 /* within 1 MiB of the largest: this row is named */, Traffic: wanproxy.Snapshot{wanproxy.KindGet: {Requests: 45, BytesOut: 5_000_000}}},
				"gcsfuse": {Status: NA, Reason: "gcsfuse not found"},
				Ceiling:   {Status: OK, Measure: scenario.Measure{Files: 1000, Elapsed: sec}},
			}},
			{Scenario: "checkpoint seq read", Phase: "cold", Unit: MBPerSec, Cells: map[string]Cell{
				Basin:     {Status: Failed, Reason: "read: input/output error"},
				"rclone":  {Status: OK, Measure: scenario.Measure{Bytes: 300e6, Elapsed: 2 * sec}, PeakRSS: 90 << 20},
				"gcsfuse": {Status: NA},
				Ceiling:   {Status: OK, Measure: scenario.Measure{Bytes: 3000e6, Elapsed: sec}},
			}},
		},
	}
}

func TestValueAndRatio(t *testing.T) {
	r := sample()
	tests := []struct {
		row    int
		system string
		value  float64
		ratio  float64
		ok     bool
	}{
		{0, Basin, 900, 0.9, true},
		{0, "rclone", 45, 0.045, true},
		{0, "gcsfuse", 0, 0, false},
		{1, Basin, 0, 0, false},
		{1, "rclone", 150, 0.05, true},
		{1, "missing", 0, 0, false},
	}
	for _, tc := range tests {
		t.Run(tc.system, func(t *testing.T) {
			v, ok := r.Rows[tc.row].Value(tc.system)
			ratio, rok := r.Rows[tc.row].Ratio(tc.system)
			if ok != tc.ok || rok != tc.ok || v != tc.value || ratio != tc.ratio {
				t.Errorf("Value = %v,%v Ratio = %v,%v; want %v, %v, %v", v, ok, ratio, rok, tc.value, tc.ratio, tc.ok)
			}
		})
	}
}

func TestMarkdown(t *testing.T) {
	var b bytes.Buffer
	if err := WriteMarkdown(&b, sample(), "chart.png"); err != nil {
		t.Fatal(err)
	}
	md := b.String()
	for _, want := range []string{
		"| small-file epoch | cold | files/s | 900 (0.90×) | 45.0† (0.045×) | n/a | 1000 | 20× (rclone) |",
		"| checkpoint seq read | cold | MB/s | failed (1) | 150 (0.050×) | n/a | 3000 | – |",
		"1. basin, checkpoint seq read cold: read: input/output error",
		"GET 45; 5 MB↓",
		"| rclone | 100 MiB | small-file epoch / cold: 90 MiB |",
		"| gcsfuse | n/a |",
		"n/a: gcsfuse not found",
		"![ratio to the local ceiling](chart.png)",
		"small: 100 × 128 KiB in 10 dirs; checkpoint: 2 × 64 MiB; tree: 500 zero-byte objects, 2 levels × 5 dirs",
		"time to first byte 30ms, 60 MB/s per connection, 1200 MB/s aggregate",
	} {
		if !strings.Contains(md, want) {
			t.Errorf("markdown lacks %q\n%s", want, md)
		}
	}
}

func TestChartAndFiles(t *testing.T) {
	dir := t.TempDir()
	r := sample()
	path, err := r.WriteFiles(dir)
	if err != nil {
		t.Fatal(err)
	}
	if filepath.Base(path) != "2026-07-01-quick.md" {
		t.Errorf("markdown at %s", path)
	}
	f, err := os.Open(filepath.Join(dir, "2026-07-01-quick.png"))
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = f.Close() }()
	img, err := png.Decode(f)
	if err != nil {
		t.Fatal(err)
	}
	if b := img.Bounds(); b.Dx() != chartWidth || b.Dy() <= headerH+footerH {
		t.Errorf("chart is %v", b)
	}
	// Basin's bar in row 0 reaches ratio 0.9: the pixel just left of its
	// end has Basin's colour.
	y := headerH + groupGap/2 + barH/2
	if got := img.At(xOf(0.9)-2, y); got != systemColor(Basin, 0) {
		t.Errorf("pixel at Basin's bar = %v", got)
	}
	if _, err := os.Stat(filepath.Join(dir, "2026-07-01-quick.json")); err != nil {
		t.Error(err)
	}
}

func TestFont(t *testing.T) {
	if n := utf8.RuneCountInString(fontChars); len(fontBits) != 35*n {
		t.Fatalf("%d bits for %d runes", len(fontBits), n)
	}
	if strings.Count(fontBits, "#")+strings.Count(fontBits, ".") != len(fontBits) {
		t.Fatal("font bits other than '#' and '.'")
	}
	if glyph('a') != glyph('A') || glyph('€') != glyph('?') || glyph('×') == glyph('?') {
		t.Fatal("glyph mapping")
	}
}

func TestFormatting(t *testing.T) {
	tests := []struct{ got, want string }{
		{times(12.3), "12×"}, {times(1.26), "1.3×"}, {times(0.853), "0.85×"},
		{times(0.0123), "0.012×"}, {times(0.00012), "0.0001×"},
		{number(1234.5), "1234"}, {number(12.34), "12.3"}, {number(1.234), "1.23"},
		{Size(1 << 30), "1 GiB"}, {Size(128 << 10), "128 KiB"}, {Size(1000), "1000 B"},
		{bandwidth(0), "unlimited"},
	}
	for _, tc := range tests {
		if tc.got != tc.want {
			t.Errorf("got %q, want %q", tc.got, tc.want)
		}
	}
}

// TestDirectAndCPU: with a direct client, the table has Basin ÷ direct
// (the direct client is not a peer), the cell's detail is shown, and the
// CPU table gives ms per file and per GB of each process and of the
// whole machine, with how busy its cores were.
func TestDirectAndCPU(t *testing.T) {
	r := sample()
	r.Systems = append(r.Systems[:3], System{Name: Direct}, r.Systems[3])
	ms := func(n int) *time.Duration { d := time.Duration(n) * time.Millisecond; return &d }
	r.Rows[0].Cells[Basin] = Cell{Status: OK, Measure: scenario.Measure{Files: 900, Bytes: 2e9, Elapsed: time.Second},
		CPU: CPU{System: ms(450), Store: ms(90), Machine: ms(1800), MachineTotal: ms(2000)}}
	r.Rows[0].Cells[Direct] = Cell{Status: OK, Measure: scenario.Measure{Files: 1800, Elapsed: time.Second}, CPU: CPU{System: ms(180)},
		Detail: "best of widths 8, 16"}
	var b bytes.Buffer
	if err := WriteMarkdown(&b, r, ""); err != nil {
		t.Fatal(err)
	}
	md := b.String()
	for _, want := range []string{
		"| Basin ÷ best peer | Basin ÷ direct |",
		"| 0.50× |\n",    // Basin 900 files/s ÷ direct 1,800
		"20× (rclone) |", // the direct client is no peer
		"direct, small-file epoch cold: best of widths 8, 16",
		"| 0.50 · 225<br>store 0.10 · 45.0<br>machine 2.00 · 900 (90 % busy) |", // Basin: 450 ms / 900 files, / 2 GB; the store's; the machine's 1.8 s of 2
		"| 0.10 · – |", // direct: no bytes counted
	} {
		if !strings.Contains(md, want) {
			t.Errorf("report lacks %q:\n%s", want, md)
		}
	}
}

// Basin's own variants (basin-b, basin-async, ...) are columns of an A/B,
// never the "best peer".
func TestBestPeerLeavesOutBasinVariants(t *testing.T) {
	r := &Report{Systems: []System{{Name: Basin}, {Name: "basin-b"}, {Name: "rclone"}, {Name: Ceiling}}}
	files := func(n int64) scenario.Measure { return scenario.Measure{Files: n, Elapsed: time.Second} }
	row := Row{Cells: map[string]Cell{
		Basin:     {Status: OK, Measure: files(100)},
		"basin-b": {Status: OK, Measure: files(400)},
		"rclone":  {Status: OK, Measure: files(50)},
	}}
	if got := versusBestPeer(r, row); got != "2.0× (rclone)" {
		t.Errorf("versusBestPeer = %q, want 2.0× (rclone)", got)
	}
}

// TestSecondRunOfTheDayKeepsTheFirst: a second report of the same day and
// mode gets its own files, and the first one's stay as they were.
func TestSecondRunOfTheDayKeepsTheFirst(t *testing.T) {
	dir := t.TempDir()
	r := sample()
	first, err := r.WriteFiles(dir)
	if err != nil {
		t.Fatal(err)
	}
	before, err := os.ReadFile(first)
	if err != nil {
		t.Fatal(err)
	}
	r.Command = "a second run"
	second, err := r.WriteFiles(dir)
	if err != nil {
		t.Fatal(err)
	}
	if filepath.Base(second) != "2026-07-01-quick-2.md" {
		t.Fatalf("second report at %s", second)
	}
	for _, ext := range []string{".png", ".json"} {
		if _, err := os.Stat(strings.TrimSuffix(second, ".md") + ext); err != nil {
			t.Error(err)
		}
	}
	md, err := os.ReadFile(second)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(md), "2026-07-01-quick-2.png") {
		t.Error("the second report does not show its own chart")
	}
	if after, _ := os.ReadFile(first); string(after) != string(before) {
		t.Error("the first report changed")
	}
}

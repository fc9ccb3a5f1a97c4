package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/basin-csi/basin/pkg/admin"
)

func TestHumanBytes(t *testing.T) {
	tests := []struct {
		n    int64
		want string
	}{
		{0, "0 B"},
		{812, "812 B"},
		{1023, "1023 B"},
		{1024, "1.0 KiB"},
		{1536, "1.5 KiB"},
		{20 << 20, "20.0 MiB"},
		{150 << 20, "150 MiB"},
		{512 << 30, "512 GiB"},
		{3 << 40, "3.0 TiB"},
		{-2048, "-2.0 KiB"},
	}
	for _, tt := range tests {
		if got := humanBytes(tt.n); got != tt.want {
			t.Errorf("humanBytes(%d) = %q, want %q", tt.n, got, tt.want)
		}
	}
}

func TestParseCacheArgs(t *testing.T) {
	tests := []struct {
		name    string
		args    []string
		check   func(cacheConfig) bool
		wantErr bool
	}{
		{"stats defaults", []string{"stats"}, func(c cacheConfig) bool {
			return c.action == "stats" && c.root == "/var/lib/basin/cache" && c.volume == "" && !c.json &&
				c.query == admin.EntryQuery{Order: admin.Oldest, Limit: 20} && c.gc == admin.GCRequest{TargetBytes: -1}
		}, false},
		{"ls flags", []string{"ls", "--cache-root", "/c", "--volume", "v", "--order", "largest", "--limit", "0", "--prefix", "a/", "--json"}, func(c cacheConfig) bool {
			return c.root == "/c" && c.volume == "v" && c.json && c.query == admin.EntryQuery{Order: admin.Largest, Prefix: "a/"}
		}, false},
		{"gc sizes", []string{"gc", "--target", "1Gi", "--cache-size", "500Mi"}, func(c cacheConfig) bool {
			return c.gc == admin.GCRequest{TargetBytes: 1 << 30, CapacityBytes: 500 << 20}
		}, false},
		{"gc target zero", []string{"gc", "--target", "0"}, func(c cacheConfig) bool { return c.gc.TargetBytes == 0 }, false},
		{"no action", nil, nil, true},
		{"unknown action", []string{"fsck"}, nil, true},
		{"flag before action", []string{"--cache-root", "/c", "stats"}, nil, true},
		{"bad order", []string{"ls", "--order", "newest"}, nil, true},
		{"bad size", []string{"gc", "--target", "lots"}, nil, true},
		{"extra argument", []string{"verify", "x"}, nil, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := parseCacheArgs(tt.args, io.Discard)
			if (err != nil) != tt.wantErr {
				t.Fatalf("err = %v, want error %v", err, tt.wantErr)
			}
			if tt.check != nil && !tt.check(c) {
				t.Errorf("parsed %+v", c)
			}
		})
	}
	if _, err := parseCacheArgs([]string{"--help"}, io.Discard); !errors.Is(err, flag.ErrHelp) {
		t.Errorf("--help: %v", err)
	}
}

func sampleResults() []volumeResult {
	return []volumeResult{
		{Dir: "pvc-a-0f1e", VolumeID: "s3/1pds/r/f/b/pvc-a/", State: stateServing, Stats: &admin.Stats{
			Live: true, UsedBytes: 3 << 30, CapacityBytes: 10 << 30, Objects: 1200,
			HitBytes: 900, MissBytes: 100, LocalOpens: 42, BucketBytes: 5 << 30, Evictions: 7,
		}},
		{Dir: "pvc-b-9a8b", VolumeID: "pvc-b", State: stateIdle, Stats: &admin.Stats{UsedBytes: 1 << 20, Objects: 3}},
		{Dir: "pvc-c-1234", State: stateBusy, Error: "a process holds the cache"},
	}
}

func TestWriteStatsTable(t *testing.T) {
	var b bytes.Buffer
	if err := writeResults(&b, "stats", sampleResults()); err != nil {
		t.Fatal(err)
	}
	want := `CACHE DIR   STATE    USED     CAP       USE    OBJECTS  HIT RATIO  LOCAL OPENS  FROM BUCKET  EVICTIONS  VOLUME
pvc-a-0f1e  serving  3.0 GiB  10.0 GiB  30.0%  1200     90.0%      42           5.0 GiB      7          s3/1pds/r/f/b/pvc-a/
pvc-b-9a8b  idle     1.0 MiB  none      -      3        -          -            -            -          pvc-b
pvc-c-1234  busy     -        -         -      -        -          -            -            -          -
pvc-c-1234: error: a process holds the cache
`
	if got := b.String(); got != want {
		t.Errorf("got:\n%s\nwant:\n%s", got, want)
	}
}

func TestWriteEntriesVerifyGC(t *testing.T) {
	at := time.Date(2026, 11, 22, 9, 30, 0, 0, time.Local)
	tests := []struct {
		action string
		r      volumeResult
		want   string
	}{
		{"ls", volumeResult{Dir: "d", VolumeID: "v", State: stateServing, Entries: []admin.Entry{
			{Key: "train/0001.jpg", Size: 300 << 10, AllocBytes: 304 << 10, Blocks: 1, PresentBlocks: 1, LastAccess: at},
			{Key: "odd\tkey", Size: 8 << 20, AllocBytes: 4 << 20, Blocks: 2, PresentBlocks: 1},
		}}, "d (v, serving):\n" +
			"  LAST ACCESS          SIZE     CACHED   BLOCKS  KEY\n" +
			"  2026-11-22 09:30:00  300 KiB  304 KiB  1/1     train/0001.jpg\n" +
			"  -                    8.0 MiB  4.0 MiB  1/2     \"odd\\tkey\"\n"},
		{"ls", volumeResult{Dir: "d", State: stateIdle}, "d (-, idle): no cached objects\n"},
		{"verify", volumeResult{Dir: "d", VolumeID: "v", State: stateIdle, Verify: &admin.VerifyReport{Objects: 2, Blocks: 5, FileBytes: 20 << 20}},
			"d (v, idle): OK: 2 objects, 5 blocks, 20.0 MiB checked\n"},
		{"verify", volumeResult{Dir: "d", VolumeID: "v", State: stateIdle, Verify: &admin.VerifyReport{Objects: 2, Blocks: 5,
			Problems: []string{`object "x" block 0: checksum mismatch`}}},
			"d (v, idle): 1 PROBLEMS in 2 objects, 5 blocks:\n  object \"x\" block 0: checksum mismatch\n"},
		{"verify", volumeResult{Dir: "d", State: stateBusy, Error: "boom"}, "d (-, busy): error: boom\n"},
		{"gc", volumeResult{Dir: "d", VolumeID: "v", State: stateServing, GC: &admin.GCResult{BeforeBytes: 10 << 20, AfterBytes: 6 << 20, TargetBytes: 5 << 20, Evicted: 3}},
			"d (v, serving): 10.0 MiB -> 6.0 MiB (target 5.0 MiB), 3 objects evicted; the rest is pinned by open files or being written\n"},
	}
	for _, tt := range tests {
		t.Run(tt.action, func(t *testing.T) {
			var b bytes.Buffer
			if err := writeResults(&b, tt.action, []volumeResult{tt.r}); err != nil {
				t.Fatal(err)
			}
			if got := b.String(); got != tt.want {
				t.Errorf("got:\n%q\nwant:\n%q", got, tt.want)
			}
		})
	}
}

func TestWriteJSONResultsRoundTrip(t *testing.T) {
	var b bytes.Buffer
	in := sampleResults()
	if err := writeJSONResults(&b, in); err != nil {
		t.Fatal(err)
	}
	var out []volumeResult
	if err := json.Unmarshal(b.Bytes(), &out); err != nil {
		t.Fatal(err)
	}
	if len(out) != 3 || *out[0].Stats != *in[0].Stats || out[2].Error != in[2].Error || !strings.Contains(b.String(), `"localOpens": 42`) {
		t.Errorf("round trip: %s", b.String())
	}
}

func TestResultsError(t *testing.T) {
	ok := volumeResult{Verify: &admin.VerifyReport{}}
	bad := volumeResult{Verify: &admin.VerifyReport{Problems: []string{"x"}}}
	failed := volumeResult{Error: "boom"}
	tests := []struct {
		name    string
		results []volumeResult
		wantErr bool
	}{
		{"all sound", []volumeResult{ok, ok}, false},
		{"a problem", []volumeResult{ok, bad}, true},
		{"a failure", []volumeResult{ok, failed}, true},
		{"none", nil, false},
	}
	for _, tt := range tests {
		if err := resultsError("verify", tt.results); (err != nil) != tt.wantErr {
			t.Errorf("%s: %v", tt.name, err)
		}
	}
}

// failingWriter fails every write, like a closed pipe.
type failingWriter struct{}

func (failingWriter) Write([]byte) (int, error) { return 0, errors.New("write: broken pipe") }

// TestWriteResultsReportsWriteErrors: a failed write of any table is the
// command's error, not lost.
func TestWriteResultsReportsWriteErrors(t *testing.T) {
	failed := []volumeResult{{Dir: "/cache/v", Error: "cannot open"}}
	for _, tt := range []struct {
		action  string
		results []volumeResult
	}{{"stats", sampleResults()}, {"ls", sampleResults()}, {"verify", failed}, {"gc", failed}} {
		if err := writeResults(failingWriter{}, tt.action, tt.results); err == nil {
			t.Errorf("%s: a failed write returned no error", tt.action)
		}
	}
	if err := writeResults(failingWriter{}, "stats", nil); err == nil {
		t.Error("no volumes: a failed write returned no error")
	}
}

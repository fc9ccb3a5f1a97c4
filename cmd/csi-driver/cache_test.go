package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"io/fs"
	"math/rand/v2"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	dto "github.com/prometheus/client_model/go"
	"golang.org/x/sys/unix"

	"github.com/basin-csi/basin/internal/testserver"
	"github.com/basin-csi/basin/pkg/admin"
	"github.com/basin-csi/basin/pkg/metrics"
)

const miB = 1 << 20

// metricValue is the value of the series of name with the given labels
// (counter or gauge), -1 if absent.
func metricValue(mfs []*dto.MetricFamily, name string, labels ...string) float64 {
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
	next:
		for _, m := range mf.Metric {
			have := map[string]string{}
			for _, l := range m.Label {
				have[l.GetName()] = l.GetValue()
			}
			for i := 0; i+1 < len(labels); i += 2 {
				if have[labels[i]] != labels[i+1] {
					continue next
				}
			}
			switch {
			case m.Counter != nil:
				return m.Counter.GetValue()
			case m.Histogram != nil:
				return float64(m.Histogram.GetSampleCount())
			}
			return m.Gauge.GetValue()
		}
	}
	return -1
}

// cacheFixture is a file bucket with three small files and one large one,
// mounted with its cache under a cache root.
type cacheFixture struct {
	bucket, mnt, root, dir string
	small                  map[string][]byte
	large                  []byte
	stop                   func() error
}

const fixtureVolume = "vol-1"

func newCacheFixture(t *testing.T) *cacheFixture {
	t.Helper()
	f := &cacheFixture{bucket: t.TempDir(), mnt: t.TempDir(), root: t.TempDir(), small: map[string][]byte{}}
	f.dir = filepath.Join(f.root, fixtureVolume)
	rng := rand.New(rand.NewPCG(1, 2))
	fill := func(n int) []byte {
		b := make([]byte, n)
		for i := range b {
			b[i] = byte(rng.Uint32())
		}
		return b
	}
	for i := range 3 {
		name := "small-" + strconv.Itoa(i)
		f.small[name] = fill(300 << 10)
		if err := os.WriteFile(filepath.Join(f.bucket, name), f.small[name], 0o644); err != nil {
			t.Fatal(err)
		}
	}
	f.large = fill(32 * miB)
	if err := os.WriteFile(filepath.Join(f.bucket, "large"), f.large, 0o644); err != nil {
		t.Fatal(err)
	}
	f.mount(t)
	return f
}

// mount starts `csi-driver mount` (no prefetching, so that a partial
// read of the large file caches only the blocks it touches).
func (f *cacheFixture) mount(t *testing.T) {
	t.Helper()
	f.stop = startMount(t, f.mnt, "--cache-dir", f.dir, "--volume-id", fixtureVolume, "--cache-size", "64Mi",
		"--read-ahead", "0", "--metadata-ttl", "-1", "file://"+f.bucket, f.mnt)
	waitFor(t, "the admin socket", func() bool {
		_, err := admin.NewClient(admin.SocketPath(f.dir)).Info(context.Background())
		return err == nil
	})
}

// largeRanges are the parts of the large file the workload reads: 256 KiB
// at the start of four 4 MiB blocks (far from any block's end, so kernel
// read-ahead stays inside the blocks the first pass fetched).
var largeRanges = []int64{0, 8 * miB, 16 * miB, 24 * miB}

// readPass reads the small files whole and parts of the large file,
// checking every byte, after dropping their pages from the page cache so
// that every read reaches the FUSE process.
func (f *cacheFixture) readPass(t *testing.T) {
	t.Helper()
	check := func(name string, off int64, want []byte) {
		t.Helper()
		file, err := os.Open(filepath.Join(f.mnt, name))
		if err != nil {
			t.Fatal(err)
		}
		defer func() { _ = file.Close() }()
		if err := unix.Fadvise(int(file.Fd()), 0, 0, unix.FADV_DONTNEED); err != nil {
			t.Fatalf("fadvise: %v", err)
		}
		got := make([]byte, len(want))
		if _, err := file.ReadAt(got, off); err != nil && err != io.EOF {
			t.Fatalf("read %s at %d: %v", name, off, err)
		}
		if !bytes.Equal(got, want) {
			t.Fatalf("%s at %d: wrong bytes", name, off)
		}
	}
	for name, data := range f.small {
		check(name, 0, data)
	}
	for _, off := range largeRanges {
		check("large", off, f.large[off:off+256<<10])
	}
}

func (f *cacheFixture) scrape(t *testing.T) []*dto.MetricFamily {
	t.Helper()
	mfs, err := admin.NewClient(admin.SocketPath(f.dir)).Metrics(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return mfs
}

// runCacheCmd runs `csi-driver cache args...` and returns its output and
// error.
func runCacheCmd(t *testing.T, args ...string) (string, error) {
	t.Helper()
	var out, errOut bytes.Buffer
	err := runCache(context.Background(), args, &out, &errOut)
	t.Logf("csi-driver cache %s:\n%s%s", strings.Join(args, " "), out.String(), errOut.String())
	return out.String(), err
}

// TestMetricsAfterReads mounts a real FUSE file system, reads the same
// data twice and checks on the admin socket and through the node's
// aggregation that the second pass came from the cache: hits and local
// opens grew, bucket bytes did not.
func TestMetricsAfterReads(t *testing.T) {
	testserver.RequireFUSE(t)
	f := newCacheFixture(t)

	f.readPass(t)
	first := f.scrape(t)
	f.readPass(t)
	second := f.scrape(t)

	report := func(name string, labels ...string) (float64, float64) {
		a, b := metricValue(first, name, labels...), metricValue(second, name, labels...)
		t.Logf("%s%v: %v after the first pass, %v after the second", name, labels, a, b)
		return a, b
	}
	if a, b := report("basin_bucket_bytes_total", "op", "get"); a < 3*300<<10+4*256<<10 || b != a {
		t.Errorf("bucket GET bytes: %v then %v; want the data once, then no more", a, b)
	}
	if a, b := report("basin_bucket_requests_total", "op", "get"); a <= 0 || b != a {
		t.Errorf("bucket GETs: %v then %v; want none in the second pass", a, b)
	}
	if a, b := report("basin_cache_hits_total"); b <= a {
		t.Errorf("cache hits did not grow in the second pass: %v then %v", a, b)
	}
	if a, b := report("basin_cache_hit_bytes_total"); b-a < 4*256<<10 {
		t.Errorf("hit bytes grew by %v in the second pass, want at least the 1 MiB of the large file's ranges", b-a)
	}
	if a, b := report("basin_cache_local_opens_total"); b-a < 3 {
		t.Errorf("local opens grew by %v, want the 3 fully cached small files", b-a)
	}
	if a, b := report("basin_cache_misses_total"); a <= 0 || b != a {
		t.Errorf("misses: %v then %v", a, b)
	}
	if _, b := report("basin_cache_used_bytes"); b < 3*300<<10+4*4*miB/2 {
		t.Errorf("used bytes %v", b)
	}
	if _, b := report("basin_cache_capacity_bytes"); b != 64*miB {
		t.Errorf("capacity %v, want 64 MiB", b)
	}
	if a, b := report("basin_bucket_get_duration_seconds"); a != metricValue(first, "basin_bucket_requests_total", "op", "get") || b != a {
		t.Errorf("GET latency histogram counts %v then %v GETs", a, b)
	}
	if _, b := report("process_resident_memory_bytes"); b <= 0 {
		t.Error("no process metrics")
	}

	// The node plugin's view: the volume's metrics with a volume label,
	// served over HTTP next to the node's own.
	src := fixedNode{{VolumeID: "s3/1pds/x/y/bucket/vol-1/", CacheDir: f.dir, Served: true, Healthy: true}}
	g, err := metrics.NewNodeGatherer(pluginRegistry(), src, metrics.NodeOptions{})
	if err != nil {
		t.Fatal(err)
	}
	addr, stop, err := serveMetrics(t.Context(), "127.0.0.1:0", g)
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	resp, err := http.Get("http://" + addr + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	_ = resp.Body.Close()
	hits := regexp.MustCompile(`(?m)^basin_cache_hits_total\{volume="s3/1pds/x/y/bucket/vol-1/"\} (\S+)$`).FindSubmatch(body)
	if hits == nil {
		t.Fatalf("node metrics lack the volume's hits:\n%s", body)
	}
	if v, _ := strconv.ParseFloat(string(hits[1]), 64); v != metricValue(second, "basin_cache_hits_total") {
		t.Errorf("node reports %s hits, the process %v", hits[1], metricValue(second, "basin_cache_hits_total"))
	}
	for _, want := range []string{`basin_volume_scrape_up{volume="s3/1pds/x/y/bucket/vol-1/"} 1`, "basin_node_heals_total 2", `basin_build_info{version=`} {
		if !bytes.Contains(body, []byte(want)) {
			t.Errorf("node metrics lack %s", want)
		}
	}
}

// fixedNode is a metrics.NodeSource with fixed volumes and two heals.
type fixedNode []metrics.NodeVolume

func (n fixedNode) Heals() int64                                 { return 2 }
func (n fixedNode) Volumes(context.Context) []metrics.NodeVolume { return n }

// corruptOneDataFile flips bytes at the start of the largest data file
// in the cache directory and returns its path.
func corruptOneDataFile(t *testing.T, dir string) string {
	t.Helper()
	var path string
	var size int64
	err := filepath.WalkDir(filepath.Join(dir, "data"), func(p string, d fs.DirEntry, err error) error {
		if err == nil && d.Type().IsRegular() {
			if fi, err := d.Info(); err == nil && fi.Size() > size {
				path, size = p, fi.Size()
			}
		}
		return err
	})
	if err != nil || path == "" {
		t.Fatalf("no data file: %v", err)
	}
	file, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = file.Close() }()
	if _, err := file.WriteAt(bytes.Repeat([]byte{0xa5}, 64), 1000); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestCacheCommand runs `csi-driver cache` on a mounted volume (answered
// by its FUSE process over the admin socket) and on the idle cache after
// unmount (opened from disk).
func TestCacheCommand(t *testing.T) {
	testserver.RequireFUSE(t)
	f := newCacheFixture(t)
	f.readPass(t)
	f.readPass(t)
	root := []string{"--cache-root", f.root}

	t.Run("serving", func(t *testing.T) {
		// The object count is the index's: wait for its periodic flush.
		waitFor(t, "the index flush", func() bool {
			s, err := admin.NewClient(admin.SocketPath(f.dir)).Stats(t.Context())
			return err == nil && s.Objects == 4
		})
		out, err := runCacheCmd(t, append([]string{"stats", "--json"}, root...)...)
		if err != nil {
			t.Fatal(err)
		}
		var res []volumeResult
		if err := json.Unmarshal([]byte(out), &res); err != nil {
			t.Fatal(err)
		}
		if len(res) != 1 || res[0].State != stateServing || res[0].Stats == nil || !res[0].Stats.Live ||
			res[0].Stats.Hits == 0 || res[0].VolumeID != fixtureVolume || res[0].Stats.Objects != 4 {
			t.Fatalf("stats = %+v", res)
		}
		if out, err := runCacheCmd(t, append([]string{"ls", "--order", "largest", "--limit", "1", "--volume", fixtureVolume}, root...)...); err != nil ||
			!regexp.MustCompile(`4/8 +large\n`).MatchString(out) {
			t.Errorf("ls: want the large file with 4 of 8 blocks first: %v", err)
		}
		if out, err := runCacheCmd(t, append([]string{"verify"}, root...)...); err != nil || !strings.Contains(out, "serving): OK: 4 objects, 7 blocks") {
			t.Errorf("verify of a sound cache: %v", err)
		}
		corruptOneDataFile(t, f.dir)
		out, err = runCacheCmd(t, append([]string{"verify"}, root...)...)
		if err == nil || !strings.Contains(out, "checksum mismatch") {
			t.Errorf("verify of a corrupted cache: err %v; want an error and the checksum mismatch", err)
		}
		// gc while serving: everything unpinned goes, and reads still
		// return the right bytes (from the bucket again).
		out, err = runCacheCmd(t, append([]string{"gc", "--target", "0"}, root...)...)
		if err != nil || !strings.Contains(out, "-> 0 B (target 0 B), 4 objects evicted") {
			t.Errorf("gc --target 0 while serving: %v", err)
		}
		f.readPass(t)
	})

	if err := f.stop(); err != nil {
		t.Fatal(err)
	}

	t.Run("idle", func(t *testing.T) {
		out, err := runCacheCmd(t, append([]string{"stats"}, root...)...)
		if err != nil || !regexp.MustCompile(`vol-1 +idle +\S+ \S+ +64\.0 MiB +\S+ +4 +- +- +- +- +vol-1`).MatchString(out) {
			t.Errorf("stats of an idle cache: %v", err)
		}
		if out, err := runCacheCmd(t, append([]string{"verify"}, root...)...); err != nil || !strings.Contains(out, "idle): OK: 4 objects") {
			t.Errorf("verify of a sound idle cache: %v", err)
		}
		corruptOneDataFile(t, f.dir)
		out, err = runCacheCmd(t, append([]string{"verify", "--volume", fixtureVolume}, root...)...)
		if err == nil || !strings.Contains(out, `object "large" block 0: checksum mismatch`) {
			t.Errorf("verify of a corrupted idle cache: err %v", err)
		}
		// The volume's cap lowered to 2 MiB: gc brings the cache (about
		// 17 MiB) under it.
		out, err = runCacheCmd(t, append([]string{"gc", "--json", "--cache-size", "2Mi"}, root...)...)
		if err != nil {
			t.Fatal(err)
		}
		var res []volumeResult
		if err := json.Unmarshal([]byte(out), &res); err != nil {
			t.Fatal(err)
		}
		if len(res) != 1 || res[0].GC == nil || res[0].GC.BeforeBytes <= 2*miB || res[0].GC.AfterBytes > 2*miB*85/100 || res[0].GC.Evicted == 0 {
			t.Fatalf("gc to a 2 MiB cap: %+v", res)
		}
		out, err = runCacheCmd(t, append([]string{"stats", "--json"}, root...)...)
		if err != nil || !strings.Contains(out, `"capacityBytes": 67108864`) || !strings.Contains(out, `"usedBytes": `+strconv.FormatInt(res[0].GC.AfterBytes, 10)) {
			t.Errorf("published usage after gc: %v; want the after size and the mount's 64 MiB cap", err)
		}
	})

	t.Run("errors", func(t *testing.T) {
		if _, err := runCacheCmd(t, append([]string{"ls", "--volume", "nope"}, root...)...); err == nil {
			t.Error("unknown volume accepted")
		}
		if _, err := runCacheCmd(t, "stats", "--cache-root", filepath.Join(f.root, "missing")); err == nil {
			t.Error("missing cache root accepted")
		}
	})
}

package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/basin-csi/basin/internal/testserver"
	basinv1 "github.com/basin-csi/basin/pkg/api/v1alpha1"
	"github.com/basin-csi/basin/pkg/objstore"
	"github.com/basin-csi/basin/pkg/warmup"
	"github.com/basin-csi/basin/pkg/warmupctl"
)

// countingStore counts the calls that reach the bucket.
type countingStore struct {
	objstore.Store
	calls atomic.Int64
}

func (s *countingStore) Stat(ctx context.Context, key string) (objstore.ObjectInfo, error) {
	s.calls.Add(1)
	return s.Store.Stat(ctx, key)
}

func (s *countingStore) Read(ctx context.Context, key string, o objstore.ReadOptions) (io.ReadCloser, objstore.ObjectInfo, error) {
	s.calls.Add(1)
	return s.Store.Read(ctx, key, o)
}

func (s *countingStore) List(ctx context.Context, o objstore.ListOptions) (objstore.ListPage, error) {
	s.calls.Add(1)
	return s.Store.List(ctx, o)
}

// dataset puts files of assorted sizes under prefix ds/ of a new bucket
// (and one file outside it) and returns their contents by path.
func dataset(t *testing.T, srv *testserver.Server) (bucket string, files map[string][]byte) {
	t.Helper()
	bucket = "basin-warmup"
	store, _ := newS3Bucket(t, srv, bucket)
	rng := rand.New(rand.NewPCG(1, 2))
	files = map[string][]byte{}
	for i := range 48 {
		size := 1 + rng.IntN(600<<10)
		switch i {
		case 0:
			size = 9<<20 + 12345 // several cache blocks, ranged parts
		case 1:
			size = 0
		}
		files[fmt.Sprintf("ds/shard-%d/part-%03d.bin", i%4, i)] = randomBytes(rng, size)
	}
	files["ds/labels.csv"] = []byte("id,label\n1,cat\n2,dog\n")
	files["other/not-warmed.bin"] = randomBytes(rng, 4096)
	for k, v := range files {
		if _, err := store.Put(t.Context(), "vol/"+k, bytes.NewReader(v), objstore.PutOptions{Size: int64(len(v))}); err != nil {
			t.Fatal(err)
		}
	}
	return bucket, files
}

func randomBytes(rng *rand.Rand, n int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(rng.Uint32())
	}
	return b
}

// mountS3 mounts s3://bucket/vol on a new directory in this process with
// a counting store, until the test ends.
func mountS3(t *testing.T, srv *testserver.Server, bucket string, extra ...string) (mnt string, counter *countingStore) {
	t.Helper()
	mnt = t.TempDir()
	args := append([]string{"--endpoint", srv.Endpoint, "--region", srv.Region, "--path-style",
		"--cache-dir", t.TempDir(), "--metadata-ttl", "-1", "--op-timeout", "5s"}, extra...)
	cfg, err := parseMountArgs(append(args, "s3://"+bucket+"/vol", mnt))
	if err != nil {
		t.Fatal(err)
	}
	counter = &countingStore{}
	s, err := openMount(t.Context(), cfg, func(st objstore.Store) objstore.Store { counter.Store = st; return counter }, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		s.close()
		if isMounted(t, mnt) {
			t.Errorf("%s still mounted", mnt)
			_ = syscall.Unmount(mnt, syscall.MNT_DETACH)
		}
	})
	return mnt, counter
}

// dropFilePages drops the kernel's page cache (1), not its dentries and
// inodes (which 3 would also drop): file reads then reach the FUSE
// process, which must serve them from its cache. Dentries stay, because a
// lookup of a directory whose dentry is gone asks the bucket whether it
// exists (pkg/fuse dirExists), even with its listing cached.
func dropFilePages(t *testing.T) {
	t.Helper()
	syscall.Sync()
	if err := os.WriteFile("/proc/sys/vm/drop_caches", []byte("1"), 0); err != nil {
		t.Fatalf("drop the page cache: %v", err)
	}
}

// TestWarmupThenBucketDown warms a prefix through a real FUSE mount of a
// real MinIO, stops MinIO, and reads every file of the prefix: all come
// from the node's cache with the right bytes, and no call reaches the
// bucket. A file outside the prefix fails, which shows the bucket is
// really gone.
func TestWarmupThenBucketDown(t *testing.T) {
	testserver.RequireFUSE(t)
	srv := testserver.NewMinIO(t)
	t.Setenv("AWS_ACCESS_KEY_ID", srv.AccessKey)
	t.Setenv("AWS_SECRET_ACCESS_KEY", srv.SecretKey)
	bucket, files := dataset(t, srv)
	mnt, counter := mountS3(t, srv, bucket)

	var out, errOut bytes.Buffer
	result := filepath.Join(t.TempDir(), "result.json")
	if err := runWarmup(t.Context(), []string{"--threads", "6", "--no-state", "--result", result, filepath.Join(mnt, "ds")}, &out, &errOut); err != nil {
		t.Fatalf("warmup: %v\n%s%s", err, out.String(), errOut.String())
	}
	var want int64
	n := 0
	for k, v := range files {
		if strings.HasPrefix(k, "ds/") {
			want += int64(len(v))
			n++
		}
	}
	summary := out.String()
	t.Logf("warmup output:\n%s", summary)
	for _, s := range []string{fmt.Sprintf("read %d files", n), "; 0 errors", "cache: fits"} {
		if !strings.Contains(summary, s) {
			t.Errorf("warmup summary lacks %q", s)
		}
	}
	if r := readReport(t, result); r.Files != int64(n) || r.Bytes != want || r.Errors != 0 || r.Fits != warmup.FitsYes || r.BytesPerSecond <= 0 {
		t.Errorf("--result wrote %+v, want %d files, %d bytes, 0 errors, fits Yes, a rate", r, n, want)
	}

	srv.Stop()
	dropFilePages(t) // reads must come from the cache's files, not the kernel's page cache
	before := counter.calls.Load()
	var got int64
	for k, v := range files {
		if !strings.HasPrefix(k, "ds/") {
			continue
		}
		b, err := os.ReadFile(filepath.Join(mnt, k))
		if err != nil {
			t.Fatalf("read %s with the bucket down: %v", k, err)
		}
		if !bytes.Equal(b, v) {
			t.Fatalf("read %s with the bucket down: %d bytes differ from the %d put", k, len(b), len(v))
		}
		got += int64(len(b))
	}
	if entries, err := os.ReadDir(filepath.Join(mnt, "ds", "shard-0")); err != nil || len(entries) != 12 {
		t.Errorf("list with the bucket down: %d entries, %v", len(entries), err)
	}
	if calls := counter.calls.Load() - before; calls != 0 {
		t.Errorf("%d calls reached the bucket while reading warmed files", calls)
	}
	t.Logf("read %d files, %d bytes with the bucket down, 0 bucket calls", n, got)
	if got != want {
		t.Errorf("read %d bytes, want %d", got, want)
	}
	if _, err := os.ReadFile(filepath.Join(mnt, "other", "not-warmed.bin")); err == nil {
		t.Error("a file that was not warmed was read with the bucket down")
	}
}

// TestWarmupDoesNotFit warms more than the cache's cap and expects the
// summary to say so.
func TestWarmupDoesNotFit(t *testing.T) {
	testserver.RequireFUSE(t)
	srv := testserver.NewMinIO(t)
	t.Setenv("AWS_ACCESS_KEY_ID", srv.AccessKey)
	t.Setenv("AWS_SECRET_ACCESS_KEY", srv.SecretKey)
	bucket, _ := dataset(t, srv)
	mnt, _ := mountS3(t, srv, bucket, "--cache-size", "8Mi", "--cache-block-size", "1Mi")
	var out bytes.Buffer
	state := filepath.Join(t.TempDir(), "w.state")
	result := filepath.Join(t.TempDir(), "result.json")
	err := runWarmup(t.Context(), []string{"--state", state, "--result", result, filepath.Join(mnt, "ds")}, &out, io.Discard)
	if err != nil {
		t.Fatalf("warmup: %v\n%s", err, out.String())
	}
	if r := readReport(t, result); r.Fits != warmup.FitsNo || !strings.Contains(r.Verdict, "does NOT fit") {
		t.Errorf("--result wrote %+v, want fits No and the verdict", r)
	}
	t.Logf("warmup output:\n%s", out.String())
	if !strings.Contains(out.String(), "WARNING: cache: does NOT fit") || !strings.Contains(out.String(), "capacity 8.0 MiB") {
		t.Errorf("summary does not say the data set does not fit an 8 MiB cache")
	}
	if _, err := os.Stat(state); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("state file after a complete run: %v", err)
	}
}

// TestWarmupCommandUsage checks the command's argument errors.
func TestWarmupCommandUsage(t *testing.T) {
	for _, args := range [][]string{{}, {"--threads", "0", "/"}, {"--bogus", "/"}} {
		if err := runWarmup(t.Context(), args, io.Discard, io.Discard); err == nil {
			t.Errorf("warmup %q succeeded", args)
		}
	}
	var out bytes.Buffer
	if err := runWarmup(t.Context(), []string{"--help"}, &out, io.Discard); err != nil || !strings.Contains(out.String(), "--metadata-only") {
		t.Errorf("--help: %v\n%s", err, out.String())
	}
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "f"), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	out.Reset()
	if err := runWarmup(ctx, []string{"--metadata-only", "--no-state", dir}, &out, io.Discard); err != nil || !strings.Contains(out.String(), "stat'ed 1 files") {
		t.Errorf("metadata-only run: %v\n%s", err, out.String())
	}
}

// TestWarmupTakesPodArgs: the command line the Warmup controller's pods
// run (warmupctl.PodArgs) is one this command accepts, and means what the
// controller wants: no state file, the Report in the termination message.
func TestWarmupTakesPodArgs(t *testing.T) {
	spec := basinv1.WarmupSpec{Paths: []string{"train", "val/x"}, Threads: 3, MetadataOnly: true}
	args := warmupctl.PodArgs(&spec)
	if args[0] != "warmup" {
		t.Fatalf("pods run %q, not csi-driver warmup", args)
	}
	f, paths, err := parseWarmupArgs(args[1:])
	if err != nil {
		t.Fatalf("csi-driver %q: %v", args, err)
	}
	want := warmupFlags{threads: 3, metadataOnly: true, noState: true, interval: 10 * time.Second, result: "/dev/termination-log"}
	if f != want || !slices.Equal(paths, []string{"/data/train", "/data/val/x"}) {
		t.Errorf("csi-driver %q parsed as %+v %q, want %+v", args, f, paths, want)
	}
}

// readReport reads what --result wrote.
func readReport(t *testing.T, path string) warmup.Report {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	r, err := warmup.ParseReport(b)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

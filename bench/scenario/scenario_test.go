package scenario

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/basin-csi/basin/bench/dataset"
	"github.com/basin-csi/basin/internal/testserver"
)

// makeSet writes set into a temporary directory and returns it.
func makeSet(t *testing.T, set dataset.Set) string {
	t.Helper()
	root := t.TempDir()
	if _, err := dataset.Write(context.Background(), dataset.DirSink{Root: root}, set, 4, nil); err != nil {
		t.Fatal(err)
	}
	return root
}

func paths(root string, set dataset.Set) []string {
	var out []string
	for _, k := range set.Keys() {
		out = append(out, filepath.Join(root, k))
	}
	return out
}

func TestReadFiles(t *testing.T) {
	set := dataset.Small(60, 70_000, 5)
	root := makeSet(t, set)
	for _, threads := range []int{1, 8} {
		m, err := ReadFiles(context.Background(), Shuffled(paths(root, set), 7), threads)
		if err != nil {
			t.Fatal(err)
		}
		if m.Files != 60 || m.Bytes != set.TotalBytes() || m.Partial || m.Elapsed <= 0 {
			t.Errorf("threads=%d: %+v, want 60 files, %d bytes", threads, m, set.TotalBytes())
		}
	}
}

func TestReadFilesMissing(t *testing.T) {
	_, err := ReadFiles(context.Background(), []string{filepath.Join(t.TempDir(), "nope")}, 2)
	if !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("err = %v, want ErrNotExist", err)
	}
}

func TestDeadlineIsPartialCancelIsError(t *testing.T) {
	set := dataset.Small(20, 10, 2)
	root := makeSet(t, set)
	expired, cancel := context.WithDeadline(context.Background(), time.Now().Add(-time.Second))
	defer cancel()
	m, err := ReadFiles(expired, paths(root, set), 2)
	if err != nil || !m.Partial || m.Files != 0 {
		t.Fatalf("expired deadline: %+v, %v; want partial, no error", m, err)
	}
	cancelled, cancel2 := context.WithCancel(context.Background())
	cancel2()
	if _, err := Walk(cancelled, root); !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled walk: err = %v, want Canceled", err)
	}
}

func TestShuffledIsDeterministicPermutation(t *testing.T) {
	in := []int{1, 2, 3, 4, 5, 6, 7, 8, 9, 10}
	a, b, c := Shuffled(in, 1), Shuffled(in, 1), Shuffled(in, 2)
	if !slices.Equal(a, b) || slices.Equal(a, c) {
		t.Fatalf("seed 1 twice: %v %v; seed 2: %v", a, b, c)
	}
	sorted := slices.Clone(a)
	slices.Sort(sorted)
	if !slices.Equal(sorted, in) {
		t.Fatalf("not a permutation: %v", a)
	}
}

func TestRandomReads(t *testing.T) {
	set := dataset.Checkpoint(2, 3<<20+123)
	root := makeSet(t, set)
	var files []File
	for _, p := range paths(root, set) {
		files = append(files, File{Path: p, Size: set.FileSize})
	}
	ranges := RandomRanges(files, 1<<20, 40, 9)
	if !slices.Equal(ranges, RandomRanges(files, 1<<20, 40, 9)) {
		t.Fatal("RandomRanges is not deterministic")
	}
	var want int64
	for _, r := range ranges {
		if r.Off%4096 != 0 || r.Off < 0 || r.Off >= set.FileSize {
			t.Fatalf("bad range %+v", r)
		}
		want += min(1<<20, set.FileSize-r.Off)
	}
	m, err := RandomReads(context.Background(), files, Shuffled(ranges, 3), 1<<20, 16)
	if err != nil {
		t.Fatal(err)
	}
	if m.Files != 40 || m.Bytes != want {
		t.Fatalf("%+v, want 40 reads of %d bytes", m, want)
	}
}

func TestWalk(t *testing.T) {
	set := dataset.Tree(30, 2, 2)
	root := makeSet(t, set)
	m, err := Walk(context.Background(), filepath.Join(root, set.Name))
	if err != nil {
		t.Fatal(err)
	}
	// 30 files + 2 first-level + 4 second-level directories.
	if m.Files != 36 {
		t.Fatalf("walked %d entries, want 36", m.Files)
	}
}

func TestWriteFiles(t *testing.T) {
	set := dataset.Checkpoint(3, 2<<20+5)
	root := t.TempDir()
	var asked []string
	durable := func(_ context.Context, key string, size int64) (bool, error) {
		asked = append(asked, key)
		st, err := os.Stat(filepath.Join(root, key))
		return err == nil && st.Size() == size, nil
	}
	m, err := WriteFiles(context.Background(), root, "write/x", set, durable)
	if err != nil {
		t.Fatal(err)
	}
	if m.Files != 3 || m.Bytes != set.TotalBytes() || len(asked) != 3 {
		t.Fatalf("%+v, durable asked for %v", m, asked)
	}
	for i := range set.Files {
		f, err := os.Open(filepath.Join(root, "write/x", filepath.Base(set.Key(i))))
		if err != nil {
			t.Fatal(err)
		}
		if err := set.Verify(set.Key(i), f); err != nil {
			t.Error(err)
		}
		_ = f.Close()
	}
}

func TestCreateFiles(t *testing.T) {
	set := dataset.Set{Name: "create", Layout: dataset.LayoutDirs, Files: 7, FileSize: 3000, Dirs: 3, Seed: 9}
	root := t.TempDir()
	durable := func(_ context.Context, key string, size int64) (bool, error) {
		st, err := os.Stat(filepath.Join(root, key))
		return err == nil && st.Size() == size, nil
	}
	m, err := CreateFiles(context.Background(), root, "create/x", set, durable)
	if err != nil {
		t.Fatal(err)
	}
	if m.Files != 7 || m.Bytes != set.TotalBytes() {
		t.Fatalf("%+v", m)
	}
	for i := range set.Files {
		f, err := os.Open(filepath.Join(root, "create/x", strings.TrimPrefix(set.Key(i), set.Prefix())))
		if err != nil {
			t.Fatal(err)
		}
		if err := set.Verify(set.Key(i), f); err != nil {
			t.Error(err)
		}
		_ = f.Close()
	}
	// Creating again: O_EXCL refuses the existing files.
	if _, err := CreateFiles(context.Background(), root, "create/x", set, durable); !errors.Is(err, os.ErrExist) {
		t.Errorf("second run: %v, want a file-exists error", err)
	}
}

func TestWriteFilesDurableError(t *testing.T) {
	boom := errors.New("boom")
	_, err := WriteFiles(context.Background(), t.TempDir(), "w", dataset.Checkpoint(1, 10),
		func(context.Context, string, int64) (bool, error) { return false, boom })
	if !errors.Is(err, boom) {
		t.Fatalf("err = %v, want boom", err)
	}
}

func torchConfig(t *testing.T) TorchConfig {
	t.Helper()
	_, file, _, _ := runtime.Caller(0)
	cfg := TorchConfig{Python: "/usr/bin/python3", Script: filepath.Join(filepath.Dir(file), "..", "torch_epoch.py"),
		Workers: 2, Batch: 8, Seed: 1}
	if err := CheckTorch(context.Background(), cfg); err != nil {
		testserver.Unavailable(t, "no torch: %v (install: %s)", err, testserver.InstallHint)
	}
	return cfg
}

func TestTorch(t *testing.T) {
	cfg := torchConfig(t)
	set := dataset.Small(40, 5000, 4)
	root := makeSet(t, set)
	ctx := context.Background()
	sess, err := StartTorch(ctx, cfg, filepath.Join(root, set.Name))
	if err != nil {
		t.Fatal(err)
	}
	defer sess.Close()
	for epoch := range 2 {
		m, err := sess.Epoch(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if m.Files != 40 || m.Bytes != set.TotalBytes() || m.Elapsed <= 0 {
			t.Fatalf("epoch %d: %+v, want 40 files of %d bytes", epoch, m, set.TotalBytes())
		}
	}
}

// TestTorchImageFolder runs the ImageFolder epochs of scenario 8: every
// JPEG is decoded, and the bytes are the files' sizes.
func TestTorchImageFolder(t *testing.T) {
	cfg := torchConfig(t)
	cfg.ImageFolder = true
	if err := CheckTorch(context.Background(), cfg); err != nil {
		testserver.Unavailable(t, "no torchvision: %v (install: %s)", err, testserver.InstallHint)
	}
	set := dataset.Images(12, 3)
	root := makeSet(t, set)
	var want int64
	for _, p := range paths(root, set) {
		fi, err := os.Stat(p)
		if err != nil {
			t.Fatal(err)
		}
		want += fi.Size()
	}
	ctx := context.Background()
	sess, err := StartTorch(ctx, cfg, filepath.Join(root, set.Name))
	if err != nil {
		t.Fatal(err)
	}
	defer sess.Close()
	m, err := sess.Epoch(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if m.Files != 12 || m.Bytes != want {
		t.Fatalf("epoch: %+v, want 12 images of %d bytes in all", m, want)
	}
	// A file that is no JPEG fails the epoch: the images are decoded.
	if err := os.WriteFile(paths(root, set)[0], []byte("not a jpeg"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := sess.Epoch(ctx); err == nil {
		t.Error("an epoch over a broken JPEG succeeded: the images are not decoded")
	}
}

func TestTorchFailures(t *testing.T) {
	cfg := torchConfig(t)
	if _, err := StartTorch(context.Background(), cfg, t.TempDir()); err == nil || !strings.Contains(err.Error(), "no files") {
		t.Fatalf("empty dir: err = %v", err)
	}
	set := dataset.Small(4, 10, 1)
	root := makeSet(t, set)
	sess, err := StartTorch(context.Background(), cfg, root)
	if err != nil {
		t.Fatal(err)
	}
	expired, cancel := context.WithDeadline(context.Background(), time.Now().Add(-time.Second))
	defer cancel()
	if m, err := sess.Epoch(expired); err != nil || !m.Partial || m.Files != 0 {
		t.Fatalf("expired epoch: %+v, %v; want an empty partial measure", m, err)
	}
	sess.Close() // after the kill: must not hang
}

// TestTorchEpochStoppedAtTheDeadline plays the script's protocol with a
// stand-in that reports progress and then hangs: the epoch is partial with
// the last progress line's figures, and the next epoch runs in a new
// interpreter.
func TestTorchEpochStoppedAtTheDeadline(t *testing.T) {
	script := filepath.Join(t.TempDir(), "hang.py")
	err := os.WriteFile(script, []byte(`import json, sys, time
print(json.dumps({"ready": True, "files": 9}), flush=True)
for line in sys.stdin:
    print(json.dumps({"progress": True, "files": 3, "bytes": 300, "seconds": 0.5}), flush=True)
    print(json.dumps({"progress": True, "files": 5, "bytes": 500, "seconds": 1.0}), flush=True)
    time.sleep(600)
`), 0o644)
	if err != nil {
		t.Fatal(err)
	}
	sess, err := StartTorch(context.Background(), TorchConfig{Python: "/usr/bin/python3", Script: script}, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer sess.Close()
	for epoch := range 2 {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		m, err := sess.Epoch(ctx)
		cancel()
		if err != nil {
			t.Fatalf("epoch %d: %v", epoch, err)
		}
		if !m.Partial || m.Files != 5 || m.Bytes != 500 || m.Elapsed != time.Second {
			t.Fatalf("epoch %d: %+v, want partial 5 files, 500 bytes in 1s", epoch, m)
		}
	}
	cancelled, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := sess.Epoch(cancelled); !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled epoch: err = %v, want context.Canceled", err)
	}
}

func TestMeasureRates(t *testing.T) {
	m := Measure{Bytes: 5e6, Files: 10, Elapsed: 2 * time.Second}
	if m.MBps() != 2.5 || m.FilesPerSec() != 5 {
		t.Fatalf("MBps %v files/s %v", m.MBps(), m.FilesPerSec())
	}
	if (Measure{}).MBps() != 0 {
		t.Fatal("zero elapsed must not divide by zero")
	}
}

package warmup

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"
)

// tree writes files (path → size) under a new directory and returns it.
func tree(t *testing.T, files map[string]int) string {
	t.Helper()
	root := t.TempDir()
	for p, n := range files {
		full := filepath.Join(root, p)
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, []byte(strings.Repeat("x", n)), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return root
}

var sample = map[string]int{
	"a/1": 100, "a/2": 2000, "a/b/3": 30000, "a/b/c/4": 1 << 20, "d/5": 5, "top": 7, "empty/.keep": 0,
}

const sampleBytes = 100 + 2000 + 30000 + 1<<20 + 5 + 7

func TestRun(t *testing.T) {
	root := tree(t, sample)
	if err := os.Symlink("a/1", filepath.Join(root, "link")); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name      string
		paths     []string
		opts      Options
		files     int64
		bytes     int64
		errors    int64
		walkFiles int64
	}{
		{"whole tree", []string{root}, Options{}, 7, sampleBytes, 0, 7},
		{"one thread, small buffer", []string{root}, Options{Threads: 1, BufferSize: 4096}, 7, sampleBytes, 0, 7},
		{"metadata only", []string{root}, Options{MetadataOnly: true}, 7, sampleBytes, 0, 7},
		{"nested and repeated paths count once", []string{root + "/a", root + "/a/b", root + "/a/"}, Options{}, 4, 100 + 2000 + 30000 + 1<<20, 0, 4},
		{"a file and a directory", []string{root + "/top", root + "/d"}, Options{Threads: 3}, 2, 12, 0, 2},
		{"missing path fails, the rest is warmed", []string{root + "/d", root + "/nope"}, Options{}, 1, 5, 1, 1},
		{"symbolic link as a path", []string{root + "/link"}, Options{}, 0, 0, 1, 0},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var ticks int
			c.opts.Progress = func(Progress) { ticks++ }
			c.opts.ProgressInterval = time.Millisecond
			res, err := Run(t.Context(), c.paths, c.opts)
			if err != nil {
				t.Fatal(err)
			}
			if res.Files != c.files || res.Bytes != c.bytes || res.Errors != c.errors || res.FoundFiles != c.walkFiles {
				t.Errorf("files %d bytes %d errors %d found %d; want %d %d %d %d (%v)",
					res.Files, res.Bytes, res.Errors, res.FoundFiles, c.files, c.bytes, c.errors, c.walkFiles, res.Failures)
			}
			if !res.Done || !res.WalkDone || ticks == 0 {
				t.Errorf("done %v walkDone %v, %d progress calls", res.Done, res.WalkDone, ticks)
			}
			if int64(len(res.Failures)) != res.Errors {
				t.Errorf("%d failures listed for %d errors", len(res.Failures), res.Errors)
			}
			if res.Cache.Known {
				t.Errorf("a temporary directory passed for a Basin mount: %+v", res.Cache)
			}
		})
	}
}

func TestRunInvalid(t *testing.T) {
	for _, o := range []struct {
		paths []string
		opts  Options
	}{
		{nil, Options{}},
		{[]string{"/"}, Options{Threads: -1}},
	} {
		if _, err := Run(t.Context(), o.paths, o.opts); !errors.Is(err, ErrInvalidOptions) {
			t.Errorf("Run(%q, %+v) = %v, want ErrInvalidOptions", o.paths, o.opts, err)
		}
	}
}

// TestRunResumes: a run that fails part way keeps its state file; the next
// run skips what it recorded and warms the rest; a complete run removes
// the state file.
func TestRunResumes(t *testing.T) {
	root := tree(t, sample)
	state := filepath.Join(t.TempDir(), "state", "w.state")
	late := filepath.Join(t.TempDir(), "late")
	paths := []string{root, late} // late does not exist yet: the first run fails
	first, err := Run(t.Context(), paths, Options{StateFile: state})
	if err != nil || first.Errors != 1 || first.Files != 7 {
		t.Fatalf("first run: %+v, %v", first.Progress, err)
	}
	if _, err := os.Stat(state); err != nil {
		t.Fatalf("state file after a failed run: %v", err)
	}
	if err := os.MkdirAll(late, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(late, "new"), []byte("new data"), 0o644); err != nil {
		t.Fatal(err)
	}
	second, err := Run(t.Context(), paths, Options{StateFile: state})
	if err != nil {
		t.Fatal(err)
	}
	if second.Files != 1 || second.Bytes != 8 || second.SkippedFiles != 7 || second.SkippedBytes != sampleBytes || second.Errors != 0 {
		t.Errorf("second run: %+v; want 1 file of 8 bytes read, 7 skipped", second.Progress)
	}
	if _, err := os.Stat(state); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("state file after a complete run: %v", err)
	}
	third, err := Run(t.Context(), paths, Options{StateFile: state})
	if err != nil || third.Files != 8 || third.SkippedFiles != 0 {
		t.Errorf("run after a complete one: %+v, %v; want everything read again", third.Progress, err)
	}
}

func TestRunStateForOtherPaths(t *testing.T) {
	root := tree(t, sample)
	state := filepath.Join(t.TempDir(), "w.state")
	missing := filepath.Join(t.TempDir(), "missing") // keeps the state file
	if _, err := Run(t.Context(), []string{root + "/a", missing}, Options{StateFile: state}); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name  string
		paths []string
		opts  Options
		note  bool
	}{
		{"other paths", []string{root, missing}, Options{}, true},
		{"other mode", []string{root + "/a", missing}, Options{MetadataOnly: true}, true},
		{"restart", []string{root + "/a", missing}, Options{Restart: true}, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			c.opts.StateFile = state
			res, err := Run(t.Context(), c.paths, c.opts)
			if err != nil {
				t.Fatal(err)
			}
			if res.SkippedFiles != 0 || (res.StateNote != "") != c.note {
				t.Errorf("skipped %d, note %q; want nothing skipped, note %v", res.SkippedFiles, res.StateNote, c.note)
			}
		})
	}
}

func TestRunCanceled(t *testing.T) {
	root := tree(t, sample)
	state := filepath.Join(t.TempDir(), "w.state")
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	res, err := Run(ctx, []string{root}, Options{StateFile: state})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("Run with a canceled context = %+v, %v", res.Progress, err)
	}
	if _, err := os.Stat(state); err != nil {
		t.Errorf("state file after an interrupted run: %v", err)
	}
}

// TestRunManyFiles exercises the parallel walk on a wide and deep tree.
func TestRunManyFiles(t *testing.T) {
	files := map[string]int{}
	for i := range 40 {
		for j := range 25 {
			files[fmt.Sprintf("d%02d/e%d/f%02d", i, i%3, j)] = i + j
		}
	}
	root := tree(t, files)
	var want int64
	for _, n := range files {
		want += int64(n)
	}
	res, err := Run(t.Context(), []string{root}, Options{Threads: 16})
	if err != nil || res.Files != int64(len(files)) || res.Bytes != want || res.Dirs != 1+40+40 {
		t.Fatalf("Run = %+v, %v; want %d files, %d bytes, 81 directories", res.Progress, err, len(files), want)
	}
}

// TestRunCanceledLeavesNothingRunning cancels runs part way: when Run
// returns, none of its goroutines (walker, listers, readers) is left. (A
// guard: how far the walker got at the cancel depends on scheduling.)
func TestRunCanceledLeavesNothingRunning(t *testing.T) {
	files := map[string]int{}
	for i := range 20 {
		for j := range 20 {
			files[fmt.Sprintf("d%02d/f%02d", i, j)] = 1
		}
	}
	root := tree(t, files)
	for i := range 20 {
		ctx, cancel := context.WithCancel(t.Context())
		_, err := Run(ctx, []string{root}, Options{Threads: 2, ProgressInterval: time.Microsecond,
			StateFile: filepath.Join(t.TempDir(), "w.state"),
			Progress: func(p Progress) {
				if p.Files >= int64(i) {
					cancel()
				}
			}})
		left := warmupGoroutines()
		cancel()
		if err != nil && !errors.Is(err, context.Canceled) {
			t.Fatalf("Run = %v", err)
		}
		if left != "" {
			t.Fatalf("goroutines of the run still running after Run returned:\n%s", left)
		}
	}
}

// warmupGoroutines returns the stacks of goroutines running this package's
// code (other than tests).
func warmupGoroutines() string {
	buf := make([]byte, 1<<20)
	buf = buf[:runtime.Stack(buf, true)]
	var out []string
	for _, g := range strings.Split(string(buf), "\n\n") {
		if strings.Contains(g, "basin/pkg/warmup.(*run)") || strings.Contains(g, "basin/pkg/warmup.(*walker)") {
			out = append(out, g)
		}
	}
	return strings.Join(out, "\n\n")
}

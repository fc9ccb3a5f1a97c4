package runner

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/basin-csi/basin/bench/dataset"
	"github.com/basin-csi/basin/bench/report"
	"github.com/basin-csi/basin/bench/sut"
	"github.com/basin-csi/basin/bench/sut/suttest"
)

func testConfig() Config {
	return Config{
		Sets: Sets{
			Small:      dataset.Small(40, 20_000, 4),
			Checkpoint: dataset.Checkpoint(2, 3<<20),
			Tree:       dataset.Tree(30, 2, 2),
			Write:      dataset.Checkpoint(2, 1<<20),
			Create:     dataset.Set{Name: "create", Layout: dataset.LayoutDirs, Files: 6, FileSize: 1000, Dirs: 2, Seed: 7},
			Images:     dataset.Images(6, 2),
		},
		Threads: 4, RandThreads: 4, RandReads: 10, RandSize: 1 << 20, RandWarmPasses: 3,
		PhaseTimeout:     time.Minute,
		VerifySample:     5,
		TorchUnavailable: "no torch in unit tests",
	}
}

// populated writes every read set of cfg into a new directory and
// returns it.
func populated(t *testing.T, cfg Config) string {
	t.Helper()
	root := t.TempDir()
	for _, set := range []dataset.Set{cfg.Sets.Small, cfg.Sets.Checkpoint, cfg.Sets.Tree} {
		if _, err := dataset.Write(context.Background(), dataset.DirSink{Root: root}, set, 4, nil); err != nil {
			t.Fatal(err)
		}
	}
	return root
}

type hookLog struct {
	mu      sync.Mutex // guards the fields below
	drops   int
	cleaned []string
}

func hooks(l *hookLog) Hooks {
	return Hooks{
		DropCaches: func() error { l.mu.Lock(); l.drops++; l.mu.Unlock(); return nil },
		Clean: func(_ context.Context, sys sut.System, prefix string) error {
			l.mu.Lock()
			defer l.mu.Unlock()
			l.cleaned = append(l.cleaned, sys.Name()+":"+prefix)
			return nil
		},
	}
}

func cell(t *testing.T, rows []report.Row, id, system string) report.Cell {
	t.Helper()
	for i, d := range rowDefs(testConfig()) {
		if d.id == id {
			return rows[i].Cells[system]
		}
	}
	t.Fatalf("no row %s", id)
	return report.Cell{}
}

func TestRunAllScenarios(t *testing.T) {
	cfg := testConfig()
	root := populated(t, cfg)
	fake := suttest.New("fake", root, sut.BackendLocal)
	gone := suttest.New("gone", root, sut.BackendS3)
	gone.SetUnavailable("not installed")
	var l hookLog
	r, err := New(cfg, hooks(&l))
	if err != nil {
		t.Fatal(err)
	}
	rows, cols := r.Run(context.Background(), []sut.System{fake, gone})

	if len(rows) != len(rowDefs(cfg)) || len(cols) != 2 {
		t.Fatalf("%d rows, %d columns", len(rows), len(cols))
	}
	for i, d := range rowDefs(cfg) {
		c := rows[i].Cells["fake"]
		switch {
		case d.id == torchCold || d.id == torchWarm || d.id == imagesCold || d.id == imagesWarm:
			if c.Status != report.NA {
				t.Errorf("%s: %s, want n/a without torch", d.id, c.Status)
			}
		case c.Status != report.OK:
			t.Errorf("%s: %s (%s), want ok", d.id, c.Status, c.Reason)
		}
		if g := rows[i].Cells["gone"]; g.Status != report.NA {
			t.Errorf("%s: unavailable system is %s, want n/a", d.id, g.Status)
		}
	}
	if c := cell(t, rows, metaCold, "fake"); c.Measure.Files != 30+2+4 {
		t.Errorf("walk saw %d entries", c.Measure.Files)
	}
	if c, cold := cell(t, rows, randWarm, "fake"), cell(t, rows, randCold, "fake"); c.Measure.Files != int64(3*cfg.RandReads) || c.Measure.Bytes != 3*cold.Measure.Bytes || cold.Measure.Bytes == 0 {
		t.Errorf("warm random reads: %+v, want %d reads of the cold ranges", c.Measure, 3*cfg.RandReads)
	}
	if c := cell(t, rows, smallCold, "fake"); c.Measure.Bytes != cfg.Sets.Small.TotalBytes() {
		t.Errorf("cold epoch read %d bytes", c.Measure.Bytes)
	}
	// Six fresh mounts (torch is skipped) and two remounts.
	mounts, unmounts, drops := fake.Counts()
	if mounts != 8 || unmounts != 8 || drops != 7 {
		t.Errorf("mounts %d unmounts %d cache drops %d; want 8, 8, 7", mounts, unmounts, drops)
	}
	if cols[0].PeakRSS != 1<<20 || cols[1].Unavailable == "" {
		t.Errorf("columns %+v", cols)
	}
	// Cleaned before the write and after the read-back, and around the
	// creates.
	if want := []string{"fake:write/fake", "fake:write/fake", "fake:create/fake", "fake:create/fake"}; !slices.Equal(l.cleaned, want) {
		t.Errorf("cleaned %v, want %v", l.cleaned, want)
	}
	if c := cell(t, rows, createWrite, "fake"); c.Status != report.OK || c.Measure.Files != 6 || c.Measure.Bytes != 6000 {
		t.Errorf("create cell %+v", c)
	}
	if st, err := os.Stat(filepath.Join(root, "write/fake/shard-001.bin")); err != nil || st.Size() != 1<<20 {
		t.Errorf("written shard: %v", err)
	}
}

func TestWrongDataFails(t *testing.T) {
	cfg := testConfig()
	root := populated(t, cfg)
	// Same length, different bytes: byte counts pass, the sample does not.
	victim := filepath.Join(root, cfg.Sets.Small.Key(0))
	if err := os.WriteFile(victim, make([]byte, cfg.Sets.Small.FileSize), 0o644); err != nil {
		t.Fatal(err)
	}
	var l hookLog
	r, err := New(cfg, hooks(&l))
	if err != nil {
		t.Fatal(err)
	}
	rows, _ := r.Run(context.Background(), []sut.System{suttest.New("fake", root, sut.BackendLocal)})
	c := cell(t, rows, smallCold, "fake")
	if c.Status != report.Failed || !strings.Contains(c.Reason, "wrong data") {
		t.Fatalf("cold epoch over wrong data: %+v", c)
	}
	if w := cell(t, rows, smallWarm, "fake"); w.Status != report.OK {
		t.Errorf("warm epoch: %s", w.Status)
	}
}

func TestMountFailureFailsScenario(t *testing.T) {
	cfg := testConfig()
	fake := suttest.New("fake", t.TempDir(), sut.BackendS3)
	fake.SetMountError(errors.New("mount: no such device"))
	var l hookLog
	r, err := New(cfg, hooks(&l))
	if err != nil {
		t.Fatal(err)
	}
	rows, _ := r.Run(context.Background(), []sut.System{fake})
	for _, id := range []string{smallCold, smallDropCache, ckptCold, metaWarm, writeReadback} {
		if c := cell(t, rows, id, "fake"); c.Status != report.Failed || c.Reason != "mount: no such device" {
			t.Errorf("%s: %+v", id, c)
		}
	}
}

func TestConfigValidate(t *testing.T) {
	bad := testConfig()
	bad.RandSize = 1 << 30
	if _, err := New(bad, Hooks{}); !errors.Is(err, ErrInvalidConfig) {
		t.Fatalf("err = %v, want ErrInvalidConfig", err)
	}
	bad = testConfig()
	bad.Sets.Tree.Fanout = 0
	if _, err := New(bad, Hooks{}); !errors.Is(err, ErrInvalidConfig) {
		t.Fatalf("err = %v, want ErrInvalidConfig", err)
	}
}

// TestRunSelectedScenarios: -scenarios plays only the scenarios given; the
// cells of the others are n/a, and a scenario number out of range is
// refused.
func TestRunSelectedScenarios(t *testing.T) {
	cfg := testConfig()
	cfg.Scenarios = []int{5}
	root := t.TempDir()
	fake := suttest.New("fake", root, sut.BackendLocal)
	var l hookLog
	r, err := New(cfg, hooks(&l))
	if err != nil {
		t.Fatal(err)
	}
	rows, _ := r.Run(context.Background(), []sut.System{fake})
	for i, d := range rowDefs(cfg) {
		c := rows[i].Cells["fake"]
		want := report.NA
		if d.id == writeWrite || d.id == writeReadback {
			want = report.OK
		}
		if c.Status != want {
			t.Errorf("%s: %s (%s), want %s", d.id, c.Status, c.Reason, want)
		}
	}
	cfg.Scenarios = []int{9}
	if _, err := New(cfg, hooks(&l)); !errors.Is(err, ErrInvalidConfig) {
		t.Errorf("scenario 9: New error %v, want ErrInvalidConfig", err)
	}
}

// TestReadOnlySystemSkipsWrites: a read-only system (basin-kernel) plays
// the reading scenarios; the writing ones (5, 7) are n/a, not failed.
func TestReadOnlySystemSkipsWrites(t *testing.T) {
	cfg := testConfig()
	cfg.Scenarios = []int{1, 5, 7}
	root := populated(t, cfg)
	fake := suttest.New("ro", root, sut.BackendLocal)
	fake.SetReadOnly()
	var l hookLog
	r, err := New(cfg, hooks(&l))
	if err != nil {
		t.Fatal(err)
	}
	rows, _ := r.Run(context.Background(), []sut.System{fake})
	for i, d := range rowDefs(cfg) {
		c := rows[i].Cells["ro"]
		want := report.NA
		if strings.HasPrefix(d.scenario, "1. ") {
			want = report.OK
		}
		if c.Status != want {
			t.Errorf("%s: %s (%s), want %s", d.id, c.Status, c.Reason, want)
		}
		if (d.id == writeWrite || d.id == createWrite) && !strings.Contains(c.Reason, "read-only") {
			t.Errorf("%s: reason %q, want it to say read-only", d.id, c.Reason)
		}
	}
}

// TestRunClient plays the scenarios on a system without a file system
// (the direct client's workloads against the directory as a bucket): the
// cold phases' reads and writes run, with the CPU time of its process;
// the checkpoint's cell is the best width's; the other phases are n/a.
// Each timed cell has the process's peak resident set during it.
func TestRunClient(t *testing.T) {
	cfg := testConfig()
	root := populated(t, cfg)
	client, err := suttest.NewClient("direct", root, sut.BackendLocal)
	if err != nil {
		t.Fatal(err)
	}
	var l hookLog
	r, err := New(cfg, hooks(&l))
	if err != nil {
		t.Fatal(err)
	}
	rows, _ := r.Run(context.Background(), []sut.System{client})
	ok := map[string]bool{smallCold: true, ckptCold: true, randCold: true, writeWrite: true, createWrite: true}
	for i, d := range rowDefs(cfg) {
		c := rows[i].Cells["direct"]
		switch {
		case ok[d.id] && (c.Status != report.OK || c.CPU.System == nil || c.PeakRSS <= 0):
			t.Errorf("%s: %s (%s), CPU %v, peak RSS %d; want ok with the process's CPU time and peak", d.id, c.Status, c.Reason, c.CPU.System, c.PeakRSS)
		case !ok[d.id] && c.Status != report.NA:
			t.Errorf("%s: %s, want n/a", d.id, c.Status)
		}
	}
	if c := cell(t, rows, smallCold, "direct"); c.Measure.Files != 40 || c.Measure.Bytes != cfg.Sets.Small.TotalBytes() {
		t.Errorf("cold epoch: %+v", c.Measure)
	}
	if c := cell(t, rows, ckptCold, "direct"); !strings.Contains(c.Detail, "widths 4: ") || !strings.Contains(c.Detail, "; 32: ") ||
		strings.Count(c.Detail, "peak RSS") != len(downloadWidths) {
		t.Errorf("checkpoint detail %q, want every width with its peak RSS", c.Detail)
	}
	if c := cell(t, rows, randCold, "direct"); c.Measure.Files != int64(cfg.RandReads) {
		t.Errorf("random reads: %+v", c.Measure)
	}
	if st, err := os.Stat(filepath.Join(root, "write/direct/shard-001.bin")); err != nil || st.Size() != 1<<20 {
		t.Errorf("written shard: %v", err)
	}
	if c := cell(t, rows, createWrite, "direct"); c.Measure.Files != 6 || c.Measure.Bytes != 6000 {
		t.Errorf("create: %+v", c.Measure)
	}
	if want := []string{"direct:write/direct", "direct:write/direct", "direct:create/direct", "direct:create/direct"}; !slices.Equal(l.cleaned, want) {
		t.Errorf("cleaned %v, want %v", l.cleaned, want)
	}

	// Same length, other bytes: the byte count passes, the sample does not.
	victim := filepath.Join(root, cfg.Sets.Small.Key(0))
	if err := os.WriteFile(victim, make([]byte, cfg.Sets.Small.FileSize), 0o644); err != nil {
		t.Fatal(err)
	}
	rows, _ = r.Run(context.Background(), []sut.System{client})
	if c := cell(t, rows, smallCold, "direct"); c.Status != report.Failed || !strings.Contains(c.Reason, "wrong data") {
		t.Errorf("cold epoch over wrong data: %+v", c)
	}
}

// TestScenarioHookBeforeEachScenario: the environment is told each played
// scenario's number before the scenario mounts (the GCS side switches to
// that data set's bucket then), and a failed preparation fails that
// scenario's cells only.
func TestScenarioHookBeforeEachScenario(t *testing.T) {
	cfg := testConfig()
	cfg.Scenarios = []int{1, 2, 4}
	root := populated(t, cfg)
	fake := suttest.New("fake", root, sut.BackendLocal)
	var l hookLog
	h := hooks(&l)
	type call struct{ n, mountsBefore int }
	var calls []call
	h.Scenario = func(_ context.Context, n int) error {
		mounts, _, _ := fake.Counts()
		calls = append(calls, call{n, mounts})
		if n == 2 {
			return errors.New("no bucket for you")
		}
		return nil
	}
	r, err := New(cfg, h)
	if err != nil {
		t.Fatal(err)
	}
	rows, _ := r.Run(context.Background(), []sut.System{fake})
	if len(calls) != 3 || calls[0].n != 1 || calls[1].n != 2 || calls[2].n != 4 {
		t.Fatalf("hook calls %v, want scenarios 1, 2, 4 in order", calls)
	}
	if calls[0].mountsBefore != 0 {
		t.Errorf("hook calls %v: scenario 1's hook came after a mount", calls)
	}
	if calls[1].mountsBefore == 0 || calls[2].mountsBefore != calls[1].mountsBefore {
		t.Errorf("hook calls %v: scenario 1 must have mounted, and the failed scenario 2 nothing", calls)
	}
	for i, d := range rowDefs(cfg) {
		c := rows[i].Cells["fake"]
		want := report.NA
		switch {
		case strings.HasPrefix(d.scenario, "1. "), strings.HasPrefix(d.scenario, "4. "):
			want = report.OK
		case strings.HasPrefix(d.scenario, "2. "):
			want = report.Failed
			if !strings.Contains(c.Reason, "no bucket for you") {
				t.Errorf("%s: reason %q, want the hook's error", d.id, c.Reason)
			}
		}
		if c.Status != want {
			t.Errorf("%s: %s (%s), want %s", d.id, c.Status, c.Reason, want)
		}
	}
}

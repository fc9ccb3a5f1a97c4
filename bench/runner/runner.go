package runner

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/basin-csi/basin/bench/report"
	"github.com/basin-csi/basin/bench/scenario"
	"github.com/basin-csi/basin/bench/sut"
	"github.com/basin-csi/basin/bench/wanproxy"
)

// Runner plays every scenario on every system.
type Runner struct {
	// constant
	cfg   Config
	hooks Hooks
}

// New validates cfg and returns a Runner.
func New(cfg Config, hooks Hooks) (*Runner, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if hooks.DropCaches == nil {
		hooks.DropCaches = scenario.DropCaches
	}
	if hooks.Logf == nil {
		hooks.Logf = func(string, ...any) {}
	}
	return &Runner{cfg: cfg, hooks: hooks}, nil
}

// Run plays the scenarios on each system in turn and returns the report's
// rows and columns (in the order of systems).
func (r *Runner) Run(ctx context.Context, systems []sut.System) ([]report.Row, []report.System) {
	defs := rowDefs(r.cfg)
	rows := make([]report.Row, len(defs))
	for i, d := range defs {
		rows[i] = report.Row{Scenario: d.scenario, Phase: d.phase, Label: d.label, Unit: d.unit, Cells: map[string]report.Cell{}}
	}
	var cols []report.System
	for _, sys := range systems {
		col := report.System{Name: sys.Name(), Command: sys.Describe()}
		cells := map[string]report.Cell{}
		if err := sys.Check(ctx); err != nil {
			col.Unavailable = err.Error()
			r.hooks.Logf("[%s] n/a: %v", sys.Name(), err)
			for _, d := range defs {
				cells[d.id] = report.Cell{Status: report.NA, Reason: err.Error()}
			}
		} else if why := r.roomProblem(sys); why != "" {
			r.hooks.Logf("[%s] not played: %s", sys.Name(), why)
			for _, d := range defs {
				cells[d.id] = report.Cell{Status: report.Failed, Reason: why}
			}
		} else {
			s := &session{r: r, sys: sys, cells: cells}
			s.run(ctx)
			col.PeakRSS = sys.PeakRSS()
			if err := sys.DropCache(); err != nil {
				r.hooks.Logf("[%s] drop cache: %v", sys.Name(), err)
			}
		}
		for i, d := range defs {
			rows[i].Cells[sys.Name()] = cells[d.id]
		}
		cols = append(cols, col)
	}
	return rows, cols
}

// session is one system's pass through the scenarios.
type session struct {
	// constant
	r   *Runner
	sys sut.System

	root  string                 // current mount root, "" when unmounted
	cells map[string]report.Cell // by phase id
}

func (s *session) logf(format string, args ...any) {
	s.r.hooks.Logf("[%s] "+format, append([]any{s.sys.Name()}, args...)...)
}

func (s *session) run(ctx context.Context) {
	blocks := []func(context.Context){s.smallFiles, s.checkpoint, s.randomReads, s.metadata, s.write, s.torch, s.create, s.images}
	if c, ok := s.sys.(sut.Client); ok {
		blocks = s.clientBlocks(c)
	}
	for i, b := range blocks {
		if ctx.Err() != nil {
			break
		}
		if len(s.r.cfg.Scenarios) > 0 && !slices.Contains(s.r.cfg.Scenarios, i+1) {
			s.skip(i+1, "not selected (-scenarios)")
			continue
		}
		if Writes(i+1) && sut.ReadsOnly(s.sys) {
			s.skip(i+1, "a read-only mount")
			continue
		}
		if s.r.hooks.Scenario != nil {
			if err := s.r.hooks.Scenario(ctx, i+1); err != nil {
				s.mark(i+1, report.Failed, "prepare: "+err.Error())
				s.logf("scenario %d: prepare: %v", i+1, err)
				continue
			}
		}
		b(ctx)
	}
	if err := s.unmount(context.WithoutCancel(ctx)); err != nil {
		s.logf("final unmount: %v", err)
	}
	for _, d := range rowDefs(s.r.cfg) {
		if _, ok := s.cells[d.id]; !ok {
			s.cells[d.id] = report.Cell{Status: report.Failed, Reason: "not run: " + context.Cause(ctx).Error()}
		}
	}
}

// fresh starts a scenario cold: unmounted, cache deleted, mounted, page
// cache dropped.
func (s *session) fresh(ctx context.Context) error {
	if err := s.unmount(ctx); err != nil {
		return err
	}
	if err := s.sys.DropCache(); err != nil {
		return fmt.Errorf("drop the system's cache: %w", err)
	}
	if err := s.mount(ctx); err != nil {
		return err
	}
	return s.r.hooks.DropCaches()
}

// remount unmounts and mounts again, keeping the persistent cache.
func (s *session) remount(ctx context.Context) error {
	if err := s.unmount(ctx); err != nil {
		return err
	}
	return s.mount(ctx)
}

func (s *session) mount(ctx context.Context) error {
	root, err := s.sys.Mount(ctx)
	if err != nil {
		return err
	}
	s.root = root
	return nil
}

func (s *session) unmount(ctx context.Context) error {
	if s.root == "" {
		return nil
	}
	s.root = ""
	return s.sys.Unmount(ctx)
}

// fail marks phases as failed without running them.

// skip marks the cells of scenario n n/a for reason (not selected by
// Config.Scenarios, or a read-only system's writes).
func (s *session) skip(n int, reason string) { s.mark(n, report.NA, reason) }

// mark gives every cell of scenario n status and reason.
func (s *session) mark(n int, status report.Status, reason string) {
	prefix := strconv.Itoa(n) + ". "
	for _, d := range rowDefs(s.r.cfg) {
		if strings.HasPrefix(d.scenario, prefix) {
			s.cells[d.id] = report.Cell{Status: status, Reason: reason}
		}
	}
}

func (s *session) fail(err error, ids ...string) {
	for _, id := range ids {
		s.cells[id] = report.Cell{Status: report.Failed, Reason: err.Error()}
		s.logf("%s: failed: %v", id, err)
	}
}

// measure runs one timed phase under the phase deadline and records its
// cell with the traffic it caused. check, when set, validates the result
// (byte counts, content) outside the timed part.
func (s *session) measure(ctx context.Context, id string, fn func(context.Context) (scenario.Measure, error), check func(scenario.Measure) error) {
	s.cells[id] = s.measureCell(ctx, id, fn, check)
}

// measureCold is measure for a cold phase that a warm phase follows on
// the same mount. When the deadline stopped it, the pass is played once
// more, untimed and within another deadline, so that the warm phase
// starts with everything visited once: a cold remainder would otherwise
// be timed as warm (the full run's walk: 41% of the "warm" walk's
// entries were still cold, each a HEAD).
func (s *session) measureCold(ctx context.Context, id string, fn func(context.Context) (scenario.Measure, error), check func(scenario.Measure) error) {
	s.measure(ctx, id, fn, check)
	if s.cells[id].Status != report.Partial {
		return
	}
	pctx, cancel := context.WithTimeout(ctx, s.r.cfg.PhaseTimeout)
	defer cancel()
	start := time.Now()
	m, err := fn(pctx)
	switch {
	case err != nil:
		s.logf("%s: playing the pass to its end (untimed) failed: %v", id, err)
	case m.Partial:
		s.logf("%s: playing the pass to its end (untimed) stopped at the deadline too; the warm phase starts partly cold", id)
	default:
		s.logf("%s: played the pass to its end, untimed, in %v", id, time.Since(start).Round(time.Millisecond))
	}
}

// measureCell is measure without recording the cell.
func (s *session) measureCell(ctx context.Context, id string, fn func(context.Context) (scenario.Measure, error), check func(scenario.Measure) error) report.Cell {
	pctx, cancel := context.WithTimeout(ctx, s.r.cfg.PhaseTimeout)
	defer cancel()
	before, cpu, rss := s.traffic(), s.cpuMark(), s.rssMark()
	m, err := fn(pctx)
	cell := report.Cell{Status: report.OK, Measure: m, Traffic: s.traffic().Sub(before), CPU: cpu.since(s.cpuMark()), PeakRSS: s.peakSince(rss)}
	if s.sys.Backend() == sut.BackendLocal {
		cell.Traffic = nil
	}
	if err == nil && check != nil && !m.Partial {
		err = check(m)
	}
	switch {
	case err != nil:
		cell.Status, cell.Reason = report.Failed, err.Error()
		s.logf("%s: failed after %v: %v", id, m.Elapsed.Round(time.Millisecond), err)
	case m.Partial:
		cell.Status = report.Partial
		s.logf("%s: stopped at the deadline: %d files, %.1f MB in %v", id, m.Files, float64(m.Bytes)/1e6, m.Elapsed.Round(time.Millisecond))
	default:
		s.logf("%s: %d files, %.1f MB in %v (%.1f MB/s, %.0f files/s, peak RSS %.0f MiB)", id, m.Files, float64(m.Bytes)/1e6,
			m.Elapsed.Round(time.Millisecond), m.MBps(), m.FilesPerSec(), float64(cell.PeakRSS)/(1<<20))
	}
	return cell
}

func (s *session) traffic() wanproxy.Snapshot {
	if s.r.hooks.Traffic == nil {
		return wanproxy.Snapshot{}
	}
	t := s.r.hooks.Traffic(s.sys.Backend())
	if t == nil {
		return wanproxy.Snapshot{}
	}
	return t
}

// seed gives every phase its own fixed random order, the same on every
// system.
func seed(id string) uint64 {
	h := fnv.New64a()
	h.Write([]byte(id))
	return h.Sum64()
}

// path joins the mount root and a key.
func (s *session) path(key string) string { return filepath.Join(s.root, filepath.FromSlash(key)) }

// expectBytes checks a whole-file read moved exactly want bytes.
func expectBytes(want int64) func(scenario.Measure) error {
	return func(m scenario.Measure) error {
		if m.Bytes != want {
			return fmt.Errorf("read %d bytes, want %d", m.Bytes, want)
		}
		return nil
	}
}

// expectFiles checks an epoch went through exactly want files.
func expectFiles(want int64) func(scenario.Measure) error {
	return func(m scenario.Measure) error {
		if m.Files != want {
			return fmt.Errorf("read %d files, want %d", m.Files, want)
		}
		return nil
	}
}

// both runs a then b, returning the first error.
func both(a, b func(scenario.Measure) error) func(scenario.Measure) error {
	return func(m scenario.Measure) error { return errors.Join(a(m), b(m)) }
}

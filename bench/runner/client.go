package runner

import (
	"context"
	"fmt"
	"path"
	"strings"

	"github.com/basin-csi/basin/bench/dataset"
	"github.com/basin-csi/basin/bench/direct"
	"github.com/basin-csi/basin/bench/report"
	"github.com/basin-csi/basin/bench/scenario"
	"github.com/basin-csi/basin/bench/sut"
)

// Why a client's phases are n/a.
const (
	naWarm     = "warm phase: the direct client has no cache"
	naTree     = "a walk of a mount's tree: the direct client has no tree"
	naReadback = "reads back after a remount what the mount wrote: the direct client has no mount"
	naLoader   = "the Python input pipeline reads files: the direct client has none"
)

// downloadPart and downloadWidths shape the client's checkpoint read:
// ranged GETs of downloadPart bytes, each width in turn, the best kept.
const downloadPart = 8 << 20

var downloadWidths = []int{4, 8, 16, 32}

// clientBlocks are the scenarios as a system without a file system
// (sut.Client, the direct client) plays them: each cold phase's reads and
// writes straight against the store, with the data sets, orders and
// threads the mounts get. Its other phases are n/a.
func (s *session) clientBlocks(c sut.Client) []func(context.Context) {
	return []func(context.Context){
		func(ctx context.Context) { s.clientSmall(ctx, c) },
		func(ctx context.Context) { s.clientCheckpoint(ctx, c) },
		func(ctx context.Context) { s.clientRandom(ctx, c) },
		func(context.Context) { s.na(naTree, metaCold, metaWarm) },
		func(ctx context.Context) { s.clientWrite(ctx, c) },
		func(context.Context) { s.na(naLoader, torchCold, torchWarm) },
		func(ctx context.Context) { s.clientCreate(ctx, c) },
		func(context.Context) { s.na(naLoader, imagesCold, imagesWarm) },
	}
}

// do is a client workload as a phase function.
func do(c sut.Client, req direct.Request) func(context.Context) (scenario.Measure, error) {
	return func(ctx context.Context) (scenario.Measure, error) { return c.Do(ctx, req) }
}

// clientVerify checks objects' content outside the timed part.
func clientVerify(ctx context.Context, c sut.Client, set dataset.Set, keys, content []string) func(scenario.Measure) error {
	return func(scenario.Measure) error {
		_, err := c.Do(ctx, direct.Request{Op: direct.OpVerify, Set: set, Keys: keys, Content: content})
		return err
	}
}

func (s *session) clientSmall(ctx context.Context, c sut.Client) {
	set := s.r.cfg.Sets.Small
	s.na(naWarm, smallWarm, smallRemount, smallDropCache)
	if err := s.fresh(ctx); err != nil {
		s.fail(err, smallCold)
		return
	}
	keys := scenario.Shuffled(set.Keys(), seed(smallCold))
	s.measure(ctx, smallCold, do(c, direct.Request{Op: direct.OpGet, Keys: keys, Threads: s.r.cfg.Threads}),
		both(expectBytes(set.TotalBytes()), clientVerify(ctx, c, set, sampleKeys(set, s.r.cfg.VerifySample), nil)))
}

// clientCheckpoint downloads the checkpoint at each width of
// downloadWidths, the page cache dropped before each, and keeps the
// fastest as the cell.
func (s *session) clientCheckpoint(ctx context.Context, c sut.Client) {
	set := s.r.cfg.Sets.Checkpoint
	s.na(naWarm, ckptWarm)
	if err := s.fresh(ctx); err != nil {
		s.fail(err, ckptCold)
		return
	}
	check := both(expectBytes(set.TotalBytes()), clientVerify(ctx, c, set, []string{set.Key(0)}, nil))
	var (
		best  report.Cell
		tried []string
	)
	for _, w := range downloadWidths {
		if err := s.r.hooks.DropCaches(); err != nil {
			s.fail(err, ckptCold)
			return
		}
		req := direct.Request{Op: direct.OpDownload, Objects: objects(set), Part: downloadPart, Threads: w}
		cell := s.measureCell(ctx, ckptCold, do(c, req), check)
		tried = append(tried, fmt.Sprintf("%d: %.0f MB/s, peak RSS %d MiB", w, cell.Measure.MBps(), cell.PeakRSS>>20))
		if best.Status == "" || cell.Status == report.OK &&
			(best.Status != report.OK || cell.Measure.MBps() > best.Measure.MBps()) {
			best = cell
		}
	}
	best.Detail = fmt.Sprintf("best of %d MiB ranged GETs at widths %s", downloadPart>>20, strings.Join(tried, "; "))
	s.cells[ckptCold] = best
}

// clientRandom sends one ranged GET per read of the cold random-read
// phase, in its order.
func (s *session) clientRandom(ctx context.Context, c sut.Client) {
	set := s.r.cfg.Sets.Checkpoint
	s.na(naWarm, randWarm)
	if err := s.fresh(ctx); err != nil {
		s.fail(err, randCold)
		return
	}
	objs := objects(set)
	files := make([]scenario.File, len(objs))
	for i, o := range objs {
		files[i] = scenario.File{Path: o.Key, Size: o.Size}
	}
	var (
		ranges []direct.Range
		want   int64
	)
	for _, rg := range scenario.RandomRanges(files, s.r.cfg.RandSize, s.r.cfg.RandReads, seed(randCold)) {
		ranges = append(ranges, direct.Range{Object: rg.File, Off: rg.Off})
		want += min(s.r.cfg.RandSize, set.FileSize-rg.Off)
	}
	req := direct.Request{Op: direct.OpRanges, Objects: objs, Ranges: ranges, Size: s.r.cfg.RandSize, Threads: s.r.cfg.RandThreads}
	s.measure(ctx, randCold, do(c, req), expectBytes(want))
}

// clientWrite uploads the write set below write/direct/, one object after
// the other, as the mounts write it.
func (s *session) clientWrite(ctx context.Context, c sut.Client) {
	set := s.r.cfg.Sets.Write
	s.na(naReadback, writeReadback)
	s.clientPut(ctx, c, writeWrite, set, "write/"+s.sys.Name(), func(k string) string { return path.Base(k) })
}

// clientCreate uploads the create set below create/direct/, one small
// object after the other, as cp -r creates them.
func (s *session) clientCreate(ctx context.Context, c sut.Client) {
	set := s.r.cfg.Sets.Create
	s.clientPut(ctx, c, createWrite, set, "create/"+s.sys.Name(), func(k string) string { return strings.TrimPrefix(k, set.Prefix()) })
}

// clientPut puts set's objects under dir (name maps a set key to the
// name below it), cleaning dir before and after.
func (s *session) clientPut(ctx context.Context, c sut.Client, id string, set dataset.Set, dir string, name func(string) string) {
	if s.r.hooks.Clean != nil {
		if err := s.r.hooks.Clean(ctx, s.sys, dir); err != nil {
			s.fail(fmt.Errorf("clean %s: %w", dir, err), id)
			return
		}
	}
	if err := s.fresh(ctx); err != nil {
		s.fail(err, id)
		return
	}
	content := set.Keys()
	keys := make([]string, len(content))
	for i, k := range content {
		keys[i] = dir + "/" + name(k)
	}
	s.measure(ctx, id, do(c, direct.Request{Op: direct.OpPut, Set: set, Keys: keys, Content: content}),
		both(expectBytes(set.TotalBytes()), clientVerify(ctx, c, set, keys[:1], content[:1])))
	if s.r.hooks.Clean != nil {
		if err := s.r.hooks.Clean(ctx, s.sys, dir); err != nil {
			s.logf("clean %s: %v", dir, err)
		}
	}
}

// objects lists the set's objects with their sizes.
func objects(set dataset.Set) []direct.Object {
	out := make([]direct.Object, set.Files)
	for i := range out {
		out[i] = direct.Object{Key: set.Key(i), Size: set.FileSize}
	}
	return out
}

// na marks phases as not applicable to the system.
func (s *session) na(why string, ids ...string) {
	for _, id := range ids {
		s.cells[id] = naCell(why)
	}
}

package runner

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path"

	"github.com/basin-csi/basin/bench/dataset"
	"github.com/basin-csi/basin/bench/report"
	"github.com/basin-csi/basin/bench/scenario"
)

// smallFiles is scenario 1: epochs over the small-file set, cold, warm,
// warm after a remount and warm after drop_caches.
func (s *session) smallFiles(ctx context.Context) {
	set := ScenarioSet(s.r.cfg.Sets, 1)
	if err := s.fresh(ctx); err != nil {
		s.fail(err, smallCold, smallWarm, smallRemount, smallDropCache)
		return
	}
	epoch := func(id string) func(context.Context) (scenario.Measure, error) {
		paths := scenario.Shuffled(s.paths(set), seed(id))
		return func(ctx context.Context) (scenario.Measure, error) {
			return scenario.ReadFiles(ctx, paths, s.r.cfg.Threads)
		}
	}
	full := expectBytes(set.TotalBytes())
	s.measureCold(ctx, smallCold, epoch(smallCold), both(full, func(scenario.Measure) error { return s.verifySample(set) }))
	s.measure(ctx, smallWarm, epoch(smallWarm), full)
	if err := s.remount(ctx); err != nil {
		s.fail(err, smallRemount, smallDropCache)
		return
	}
	s.measure(ctx, smallRemount, epoch(smallRemount), full)
	if err := s.r.hooks.DropCaches(); err != nil {
		s.fail(err, smallDropCache)
		return
	}
	s.measure(ctx, smallDropCache, epoch(smallDropCache), full)
}

// checkpoint is scenario 2: every shard read in order by one thread, cold
// and warm after drop_caches.
func (s *session) checkpoint(ctx context.Context) {
	set := ScenarioSet(s.r.cfg.Sets, 2)
	if err := s.fresh(ctx); err != nil {
		s.fail(err, ckptCold, ckptWarm)
		return
	}
	read := func(ctx context.Context) (scenario.Measure, error) { return scenario.ReadFiles(ctx, s.paths(set), 1) }
	full := expectBytes(set.TotalBytes())
	s.measureCold(ctx, ckptCold, read, both(full, func(scenario.Measure) error { return s.verify(set, set.Key(0), set.Key(0)) }))
	if err := s.r.hooks.DropCaches(); err != nil {
		s.fail(err, ckptWarm)
		return
	}
	s.measure(ctx, ckptWarm, read, full)
}

// randomReads is scenario 3: preads at random offsets of the checkpoint,
// cold, then the same ranges again, RandWarmPasses times, each pass in
// another order.
func (s *session) randomReads(ctx context.Context) {
	set := ScenarioSet(s.r.cfg.Sets, 3)
	if err := s.fresh(ctx); err != nil {
		s.fail(err, randCold, randWarm)
		return
	}
	files := make([]scenario.File, set.Files)
	for i, p := range s.paths(set) {
		files[i] = scenario.File{Path: p, Size: set.FileSize}
	}
	ranges := scenario.RandomRanges(files, s.r.cfg.RandSize, s.r.cfg.RandReads, seed(randCold))
	var want int64
	for _, rg := range ranges {
		want += min(s.r.cfg.RandSize, set.FileSize-rg.Off)
	}
	run := func(order []scenario.Range) func(context.Context) (scenario.Measure, error) {
		return func(ctx context.Context) (scenario.Measure, error) {
			return scenario.RandomReads(ctx, files, order, s.r.cfg.RandSize, s.r.cfg.RandThreads)
		}
	}
	passes := s.r.cfg.RandWarmPasses
	warm := make([]scenario.Range, 0, passes*len(ranges))
	for p := range passes {
		warm = append(warm, scenario.Shuffled(ranges, seed(randWarm)+uint64(p))...)
	}
	s.measureCold(ctx, randCold, run(ranges), expectBytes(want))
	s.measure(ctx, randWarm, run(warm), expectBytes(want*int64(passes)))
}

// metadata is scenario 4: a find-style walk of the tree set, cold and warm.
func (s *session) metadata(ctx context.Context) {
	set := ScenarioSet(s.r.cfg.Sets, 4)
	if err := s.fresh(ctx); err != nil {
		s.fail(err, metaCold, metaWarm)
		return
	}
	want := int64(set.Files + countDirs(set))
	walk := func(ctx context.Context) (scenario.Measure, error) {
		return scenario.Walk(ctx, s.path(set.Name))
	}
	entries := func(m scenario.Measure) error {
		if m.Files != want {
			return fmt.Errorf("walked %d entries, want %d", m.Files, want)
		}
		return nil
	}
	s.measureCold(ctx, metaCold, walk, entries)
	s.measure(ctx, metaWarm, walk, entries)
}

// write is scenario 5: the write set written below write/<system>/ until
// it is in the bucket, then read back after a remount and drop_caches.
func (s *session) write(ctx context.Context) {
	set := ScenarioSet(s.r.cfg.Sets, 5)
	dir := "write/" + s.sys.Name()
	if s.r.hooks.Clean != nil {
		if err := s.unmount(ctx); err != nil {
			s.fail(err, writeWrite, writeReadback)
			return
		}
		if err := s.r.hooks.Clean(ctx, s.sys, dir); err != nil {
			s.fail(fmt.Errorf("clean %s: %w", dir, err), writeWrite, writeReadback)
			return
		}
	}
	if err := s.fresh(ctx); err != nil {
		s.fail(err, writeWrite, writeReadback)
		return
	}
	var durable scenario.Durable
	if s.r.hooks.Durable != nil {
		durable = s.r.hooks.Durable(s.sys.Backend())
	}
	s.measure(ctx, writeWrite, func(ctx context.Context) (scenario.Measure, error) {
		return scenario.WriteFiles(ctx, s.root, dir, set, durable)
	}, expectBytes(set.TotalBytes()))
	if c := s.cells[writeWrite]; c.Status != report.OK {
		s.fail(errors.New("the write phase did not complete"), writeReadback)
		return
	}
	if err := s.remount(ctx); err != nil {
		s.fail(err, writeReadback)
		return
	}
	if err := s.r.hooks.DropCaches(); err != nil {
		s.fail(err, writeReadback)
		return
	}
	written := make([]string, set.Files)
	for i := range written {
		written[i] = s.path(dir + "/" + path.Base(set.Key(i)))
	}
	first := dir + "/" + path.Base(set.Key(0))
	s.measure(ctx, writeReadback, func(ctx context.Context) (scenario.Measure, error) {
		return scenario.ReadFiles(ctx, written, 1)
	}, both(expectBytes(set.TotalBytes()), func(scenario.Measure) error { return s.verify(set, set.Key(0), first) }))
	// The written shards are not needed any more; a full run would
	// otherwise keep 4 GiB per system in the bucket.
	if s.r.hooks.Clean != nil {
		if err := s.r.hooks.Clean(ctx, s.sys, dir); err != nil {
			s.logf("clean %s: %v", dir, err)
		}
	}
}

// torch is scenario 6: two PyTorch DataLoader epochs over the small-file
// set in one interpreter, cold and warm.
func (s *session) torch(ctx context.Context) {
	if why := s.r.cfg.TorchUnavailable; why != "" {
		for _, id := range []string{torchCold, torchWarm} {
			s.cells[id] = naCell(why)
		}
		return
	}
	set := ScenarioSet(s.r.cfg.Sets, 6)
	if err := s.fresh(ctx); err != nil {
		s.fail(err, torchCold, torchWarm)
		return
	}
	cfg := s.r.cfg.Torch
	cfg.Seed = seed(torchCold)
	sctx, cancel := context.WithTimeout(ctx, s.r.cfg.PhaseTimeout)
	sess, err := scenario.StartTorch(sctx, cfg, s.path(set.Name))
	cancel()
	if err != nil {
		s.fail(err, torchCold, torchWarm)
		return
	}
	defer sess.Close()
	for _, id := range []string{torchCold, torchWarm} {
		s.measure(ctx, id, sess.Epoch, expectBytes(set.TotalBytes()))
	}
}

// images is scenario 8: two epochs of an ImageFolder of JPEGs decoded by
// DataLoader workers, cold and warm.
func (s *session) images(ctx context.Context) {
	why := s.r.cfg.TorchUnavailable
	if why == "" {
		why = s.r.cfg.ImagesUnavailable
	}
	if why != "" {
		for _, id := range []string{imagesCold, imagesWarm} {
			s.cells[id] = naCell(why)
		}
		return
	}
	set := ScenarioSet(s.r.cfg.Sets, 8)
	if err := s.fresh(ctx); err != nil {
		s.fail(err, imagesCold, imagesWarm)
		return
	}
	cfg := s.r.cfg.Torch
	cfg.ImageFolder = true
	cfg.Seed = seed(imagesCold)
	sctx, cancel := context.WithTimeout(ctx, s.r.cfg.PhaseTimeout)
	sess, err := scenario.StartTorch(sctx, cfg, s.path(set.Name))
	cancel()
	if err != nil {
		s.fail(err, imagesCold, imagesWarm)
		return
	}
	defer sess.Close()
	for _, id := range []string{imagesCold, imagesWarm} {
		s.measure(ctx, id, sess.Epoch, expectFiles(int64(set.Files)))
	}
}

// paths lists the set's files below the mount root.
func (s *session) paths(set dataset.Set) []string {
	keys := set.Keys()
	out := make([]string, len(keys))
	for i, k := range keys {
		out[i] = s.path(k)
	}
	return out
}

// verifySample checks the content of VerifySample small files spread over
// the set.
func (s *session) verifySample(set dataset.Set) error {
	for _, k := range sampleKeys(set, s.r.cfg.VerifySample) {
		if err := s.verify(set, k, k); err != nil {
			return err
		}
	}
	return nil
}

// sampleKeys are n keys spread over the set (all of them if it has fewer).
func sampleKeys(set dataset.Set, n int) []string {
	n = min(n, set.Files)
	out := make([]string, n)
	for i := range n {
		out[i] = set.Key(i * set.Files / max(n, 1))
	}
	return out
}

// verify checks that the file at key rel below the mount holds the content
// generated for key.
func (s *session) verify(set dataset.Set, key, rel string) error {
	f, err := os.Open(s.path(rel))
	if err != nil {
		return err
	}
	defer func() { _ = f.Close() }()
	if err := set.Verify(key, f); err != nil {
		return fmt.Errorf("wrong data: %w", err)
	}
	return nil
}

// countDirs is the number of directories below the set's root that its
// keys imply.
func countDirs(set dataset.Set) int {
	dirs := map[string]bool{}
	for _, k := range set.Keys() {
		for d := path.Dir(k); d != set.Name && d != "."; d = path.Dir(d) {
			dirs[d] = true
		}
	}
	return len(dirs)
}

func naCell(why string) report.Cell { return report.Cell{Status: report.NA, Reason: why} }

// create is scenario 7: the create set's files made one by one below
// create/<system>/ (directories created as they come, each file opened
// with O_CREAT|O_EXCL, written, closed — what cp -r does), timed until
// every file is in the bucket. The cell's traffic shows the requests a
// new file costs.
func (s *session) create(ctx context.Context) {
	set := ScenarioSet(s.r.cfg.Sets, 7)
	dir := "create/" + s.sys.Name()
	if s.r.hooks.Clean != nil {
		if err := s.unmount(ctx); err != nil {
			s.fail(err, createWrite)
			return
		}
		if err := s.r.hooks.Clean(ctx, s.sys, dir); err != nil {
			s.fail(fmt.Errorf("clean %s: %w", dir, err), createWrite)
			return
		}
	}
	if err := s.fresh(ctx); err != nil {
		s.fail(err, createWrite)
		return
	}
	var durable scenario.Durable
	if s.r.hooks.Durable != nil {
		durable = s.r.hooks.Durable(s.sys.Backend())
	}
	s.measure(ctx, createWrite, func(ctx context.Context) (scenario.Measure, error) {
		return scenario.CreateFiles(ctx, s.root, dir, set, durable)
	}, expectBytes(set.TotalBytes()))
	if s.r.hooks.Clean != nil {
		if err := s.r.hooks.Clean(ctx, s.sys, dir); err != nil {
			s.logf("clean %s: %v", dir, err)
		}
	}
}

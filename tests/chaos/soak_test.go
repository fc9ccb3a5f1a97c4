package chaos

import (
	"context"
	"fmt"
	"maps"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/basin-csi/basin/internal/testserver"
	"github.com/basin-csi/basin/pkg/objstore"
	"github.com/basin-csi/basin/pkg/objstore/s3store"
)

// Environment of TestSoak (make soak, hack/soak.sh).
const (
	// soakEnv enables TestSoak and says how long it injects faults (a Go
	// duration: 5m, 1h).
	soakEnv = "BASIN_SOAK"
	// soakSeedEnv is the seed of the fault schedule (default: random,
	// printed).
	soakSeedEnv = "SOAK_SEED"
	// soakDirEnv is the report directory (default: a new one under
	// _output/soak).
	soakDirEnv = "BASIN_SOAK_DIR"
)

// soakStallBound is the longest any reader's or writer's single call may
// take. A frozen FUSE process is found by the watchdog's statfs within
// its check interval and timeout (5 s + 10 s, the node plugin's
// defaults); a frozen or restarting MinIO holds a call for up to 8 s of
// the schedule; a node plugin restart, a heal on a saturated machine and
// a fetch retried after the store came back add seconds. Faults overlap,
// so the bound is their sum with a margin, not the largest of them: the
// fixed seed's schedule puts on one volume, within 45 s, a FUSE process
// frozen for 10.8 s, a MinIO restart, MinIO frozen for 7.7 s, a node
// plugin kill and the FUSE process frozen again for 8.5 s, and a rename
// across all of them took 47.6 s (40 s before, a bound that run broke).
const soakStallBound = 60 * time.Second

// soakVolumes is the number of volumes of the soak.
const soakVolumes = 3

// TestSoak is make soak: three volumes published by the real node plugin
// (with its descriptor holder) over buckets of one MinIO, each read by 4
// reader threads and a lister (every byte checked, every listing must
// show the volume's files) and written by the soak writer (checkpoints
// replaced in place and by rename, appends, small files; every
// acknowledged close, fsync, rename and unlink recorded and looked for in
// the bucket, continuously and at the end), while a seeded schedule of
// faults (soakfaults_test.go) runs for $BASIN_SOAK, overlapping. It fails
// on any error other than the two documented kinds (soakErrors), any
// acknowledged change missing from the bucket, a call slower than
// soakStallBound, and a leak (processes, mounts, staged files, the node
// plugin's descriptors and goroutines; end against start). The report
// directory gets report.md, samples.csv and resources.png (RSS and
// descriptors over time), and on failure the plugin's log, the FUSE
// processes' timelines and the mount table; the last line printed names
// it, with the seed.
func TestSoak(t *testing.T) {
	d, err := time.ParseDuration(testserver.OptIn(t, soakEnv, "make soak"))
	if err != nil || d <= 0 {
		t.Fatalf("%s=%q: want a duration such as 5m or 1h", soakEnv, os.Getenv(soakEnv))
	}
	seed := rand.Uint64() >> 1
	if v := os.Getenv(soakSeedEnv); v != "" {
		if seed, err = strconv.ParseUint(v, 10, 64); err != nil {
			t.Fatalf("%s=%q: want a decimal number", soakSeedEnv, v)
		}
	}
	out := os.Getenv(soakDirEnv)
	if out == "" {
		out = filepath.Join("..", "..", "_output", "soak", fmt.Sprintf("%s-seed-%d", time.Now().UTC().Format("20060102-150405"), seed))
	}
	if err := os.MkdirAll(out, 0o755); err != nil {
		t.Fatal(err)
	}
	out, _ = filepath.Abs(out)
	fmt.Fprintf(os.Stderr, "soak: seed=%d duration=%v report=%s (replay: make soak DURATION=%v SOAK_SEED=%d)\n", seed, d, out, d, seed)
	testserver.RequireFUSE(t)

	s := newSoakRig(t, out)
	sched := schedule(seed, d, soakVolumes)
	s.logf("seed %d: %d faults scheduled over %v", seed, len(sched), d)

	// Workers.
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	for _, v := range s.vols {
		v.reader = s.startWorker(v.id+"/reader", readerEnv, readerSpec{Dir: v.pub.target, Files: sums(v.files), Threads: 4, Listers: 1, Summary: true}, nil)
		v.writer = s.startWorker(v.id+"/writer", writerEnv, writerSpec{Dir: filepath.Join(v.pub.target, "w"), Soak: true, Volume: v.idx}, v.ledger)
		go v.ledger.verifyLoop(ctx, 2*time.Second)
	}
	sampler := startSampler(s, 5*time.Second)
	time.Sleep(10 * time.Second) // the workers under way, the caches warm
	start := s.leakCount()
	s.logf("start: %s", start)

	in := &injector{s: s, busy: map[string]bool{}, remounts: map[int][]killAt{}}
	faultCtx, stopFaults := context.WithTimeout(ctx, d)
	defer stopFaults()
	go s.progress(faultCtx, in)
	in.run(faultCtx, sched)
	s.logf("faults over; waiting for every volume to serve")
	if err := s.waitAllHealthy(2 * time.Minute); err != nil {
		s.failf("after the faults: %v", err)
	}
	time.Sleep(10 * time.Second) // the workers go on after the last fault

	// Stop the workers; the ledgers check what is left.
	for _, v := range s.vols {
		for _, c := range []*soakChild{v.reader, v.writer} {
			if err := c.stop(2 * time.Minute); err != nil {
				s.failf("%v", err)
			}
		}
	}
	cancel()
	fctx, fcancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer fcancel()
	for _, v := range s.vols {
		v.ledger.finish(fctx)
	}
	end := s.settledLeakCount(start, time.Minute)
	s.logf("end: %s", end)
	s.checkLeaks(start, end)
	sampler.stop()

	// Unstage: nothing may be left.
	for _, v := range s.vols {
		uctx, ucancel := context.WithTimeout(context.Background(), time.Minute)
		if err := s.node.unpublish(uctx, v.id, v.pub.staging, v.pub.target); err != nil {
			s.failf("unpublish %s: %v", v.id, err)
		}
		ucancel()
	}
	s.checkUnstaged()

	rep := s.summarize(seed, d, in, start, end, sampler)
	s.writeReport(rep, sampler, in)
	if len(s.failures) > 0 {
		s.keepEvidence()
		s.kept = true
		for _, f := range s.failures[:min(len(s.failures), 30)] {
			t.Error(f)
		}
	}
	line := rep.line(len(s.failures) == 0, out)
	writeSummary(t, "BASIN_SOAK_SUMMARY", line)
}

// newSoakRig starts MinIO, the holder and the node plugin (cache root on a
// 1 GiB tmpfs) and publishes the three volumes.
func newSoakRig(t *testing.T, out string) *soakRig {
	t.Helper()
	logf, err := os.Create(filepath.Join(out, "soak.log"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = logf.Close() })
	s := &soakRig{t: t, ctx: t.Context(), out: out, log: logf, t0: time.Now(), srv: testserver.NewMinIO(t)}
	s.sts = stsIssuer{srv: s.srv}
	s.node = newNodeRig(t)
	t.Cleanup(func() { // before nodeRig's cleanup removes its directory
		if t.Failed() && !s.kept {
			s.keepEvidence()
		}
	})
	if err := os.MkdirAll(s.node.cacheRoot, 0o700); err != nil {
		t.Fatal(err)
	}
	// A cache disk of its own, small enough to fill (nodeRig's cleanup
	// unmounts it with the rest).
	if err := unix.Mount("tmpfs", s.node.cacheRoot, "tmpfs", 0, "size=1g,mode=0700"); err != nil {
		t.Fatalf("tmpfs for the cache: %v", err)
	}
	port, err := freeLocalPort()
	if err != nil {
		t.Fatal(err)
	}
	s.node.metrics = "127.0.0.1:" + strconv.Itoa(port)
	s.node.nodeArgs = []string{"--metrics-address", s.node.metrics}
	s.node.startHolder(t)
	s.node.startNode(t)
	s.node.waitHealthyNode(t)
	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
	defer cancel()
	for i := range soakVolumes {
		files := randomFiles("data/small/", 24, 256<<10)
		maps.Copy(files, randomFiles("data/large/", 2, 8<<20))
		b := newBucketOn(t, s.srv, files)
		creds, err := s.sts.assume(ctx)
		if err != nil {
			t.Fatalf("temporary credentials (the rotation fault needs MinIO's STS): %v", err)
		}
		id := fmt.Sprintf("soak-%d", i)
		v := &soakVol{idx: i, id: id, files: files, pub: publication{volumeID: id, bucket: b, cacheSize: "192Mi", creds: creds,
			staging: filepath.Join(s.node.dir, "staging-"+strconv.Itoa(i)), target: filepath.Join(s.node.dir, "pod-"+strconv.Itoa(i), "mount")}}
		if err := s.node.publish(ctx, v.pub); err != nil {
			t.Fatalf("volume %d: %v", i, err)
		}
		store, err := s3store.New(t.Context(), objstore.Config{Backend: objstore.BackendS3, Endpoint: s.srv.Endpoint, Region: s.srv.Region,
			PathStyle: true, Bucket: b.name}, b.creds)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = store.Close() })
		v.ledger = newLedger(id, "w", store)
		v.ledger.logf = s.logf
		s.vols = append(s.vols, v)
	}
	return s
}

// progress logs the workers' counters every minute.
func (s *soakRig) progress(ctx context.Context, in *injector) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-time.After(time.Minute):
		}
		var ops, errs, acks int64
		for _, v := range s.vols {
			for _, c := range []*soakChild{v.reader, v.writer} {
				kinds, _ := c.snapshot()
				for _, k := range kinds {
					ops += k.Ops
					errs += k.Errors
				}
			}
			a, _, _ := v.ledger.counts()
			acks += a
		}
		done, _ := in.byKind()
		n := 0
		for _, c := range done {
			n += c
		}
		s.logf("progress: ops=%d errors=%d acks=%d faults=%d", ops, errs, acks, n)
	}
}

// sortedKeys returns m's keys in order.
func sortedKeys[V any](m map[string]V) []string {
	return slices.Sorted(maps.Keys(m))
}

// oneLine joins lines for a report cell.
func oneLine(lines []string) string { return strings.Join(lines, "; ") }

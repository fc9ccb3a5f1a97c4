package chaos

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"syscall"
	"testing"
	"time"

	"github.com/basin-csi/basin/internal/testserver"
	"github.com/basin-csi/basin/pkg/supervisor"
)

// TestChaosSharedVolumes: two read-only volumes of one bucket, as two
// teams' PVCs of one dataset, share one FUSE process and one cache on the
// node. 4 readers on each volume's published target read while that
// process is killed with SIGKILL at random moments (BASIN_CHAOS times):
// no read of either volume fails, every byte matches, every heal is a
// takeover (neither mount is replaced), and the node keeps one cache.
// The summary line is written to $BASIN_CHAOS_SHARED_SUMMARY.
func TestChaosSharedVolumes(t *testing.T) {
	testserver.OptIn(t, chaosEnv, "make chaos")
	kills := chaosKills()
	files := chaosFiles()
	b := newBucket(t, files)
	r := newNodeRig(t)
	r.startHolder(t)
	r.startNode(t)
	r.waitHealthyNode(t)

	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	var pubs []publication
	for _, id := range []string{"team-a-dataset", "team-b-dataset"} {
		p := publication{volumeID: id, staging: filepath.Join(r.dir, "csi", id, "globalmount"),
			target: filepath.Join(r.dir, "pods", id, "mount"), bucket: b, readOnly: true, cacheSize: "256Mi", creds: b.creds}
		if err := r.publish(ctx, p); err != nil {
			t.Fatal(err)
		}
		pubs = append(pubs, p)
	}
	devs := []uint64{mountDev(t, pubs[0].target), mountDev(t, pubs[1].target)}
	if devs[0] != devs[1] {
		t.Fatalf("the two volumes' targets are mounts of connections %d and %d: want one shared process", devs[0], devs[1])
	}
	servingPids := func() []int {
		t.Helper()
		pids, err := supervisor.ProcsUnder(r.cacheRoot)
		if err != nil {
			t.Fatal(err)
		}
		return slices.DeleteFunc(pids, func(p int) bool { return !holdsIndex(p) })
	}
	if pids := servingPids(); len(pids) != 1 {
		t.Fatalf("FUSE processes serving a cache: %v, want one for both volumes", pids)
	}
	readers := []*reader{
		startReader(t, readerSpec{Dir: pubs[0].target, Files: sums(files), Threads: 4}),
		startReader(t, readerSpec{Dir: pubs[1].target, Files: sums(files), Threads: 4}),
	}

	rng := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 4))
	var done []killAt
	time.Sleep(300 * time.Millisecond) // readers under way, the cache still cold
	for i := range kills {
		time.Sleep(time.Duration(100+rng.IntN(700)) * time.Millisecond)
		pids := servingPids()
		if len(pids) != 1 {
			t.Fatalf("kill %d: FUSE processes serving a cache: %v, want one", i, pids)
		}
		at := time.Now()
		if err := syscall.Kill(pids[0], syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
		dead := time.Now()
		for _, p := range pubs {
			r.waitHealthy(t, p.volumeID, p.target)
		}
		done = append(done, killAt{at: at, dead: dead, healed: time.Now()})
		for j, p := range pubs {
			if got := mountDev(t, p.target); got != devs[j] {
				t.Errorf("kill %d replaced %s's mount (device %d, was %d)", i+1, p.volumeID, got, devs[j])
			}
		}
	}
	time.Sleep(time.Second) // readers go on after the last kill

	var errs, kernelEIO, reads int
	var pauses []time.Duration
	for j, rd := range readers {
		rep := rd.report(t)
		e, k := checkKillErrors(t, pubs[j].volumeID+" reader", rep.Ops, done, r.failedOps())
		errs, kernelEIO, reads = errs+e, kernelEIO+k, reads+len(rep.Ops)
		pauses = append(pauses, pausesOf(rep, done)...)
		if len(rep.Ops) < 20*len(done) {
			t.Errorf("%s: only %d reads during %d kills: the readers stalled", pubs[j].volumeID, len(rep.Ops), len(done))
		}
	}
	slices.Sort(pauses)
	for _, p := range pubs {
		if err := r.unpublish(ctx, p.volumeID, p.staging, p.target); err != nil {
			t.Fatalf("unpublish/unstage %s: %v", p.volumeID, err)
		}
	}
	caches, err := os.ReadDir(r.cacheRoot)
	if err != nil || len(caches) != 1 {
		t.Fatalf("cache root holds %v (%v): want the share's cache alone", caches, err)
	}
	verifyCache(t, filepath.Join(r.cacheRoot, caches[0].Name()), "shared", b)
	writeSummary(t, "BASIN_CHAOS_SHARED_SUMMARY", fmt.Sprintf("shared volumes: errors=%d kills=%d volumes=%d reads=%d max_pause_ms=%d p50_pause_ms=%d kernel_eio=%d",
		errs, len(done), len(pubs), reads, pauses[len(pauses)-1].Milliseconds(), pauses[len(pauses)/2].Milliseconds(), kernelEIO))
}

package chaos

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/basin-csi/basin/pkg/cache"
	"github.com/basin-csi/basin/pkg/objstore/objstoretest"
)

// killAt is one disruption: when it was made and when the volume was
// seen serving again. dead (zero: at) is when its FUSE processes were
// dead for sure, for a disruption that kills them after something else
// (the node plugin first): a call in flight at any moment from at to dead
// may have had its request copied to a dying process.
type killAt struct{ at, dead, healed time.Time }

// deadBy is when the disruption's FUSE processes were dead.
func (k killAt) deadBy() time.Time {
	if k.dead.IsZero() {
		return k.at
	}
	return k.dead
}

// pausesOf returns each kill's pause: the longest a read that overlapped
// it (in flight at the kill, or started before the heal was seen) waited
// beyond the kill.
func pausesOf(rep readerReport, kills []killAt) []time.Duration {
	pauses := make([]time.Duration, 0, len(kills))
	for _, k := range kills {
		var p time.Duration
		for _, op := range rep.Ops {
			start, end := time.Unix(0, op.Start), time.Unix(0, op.End)
			if end.Before(k.at) || start.After(k.healed) {
				continue
			}
			from := k.at
			if start.After(from) {
				from = start
			}
			p = max(p, end.Sub(from))
		}
		pauses = append(pauses, p)
	}
	return pauses
}

// verifyCache opens a volume's cache once its FUSE process is gone and
// fails the test unless it verifies.
func verifyCache(t *testing.T, dir, volumeID string, b bucket) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	c, err := cache.Open(ctx, dir, objstoretest.NewFake(), cache.Options{VolumeID: volumeID, Origin: "s3://" + b.name + "/ @" + b.srv.Endpoint})
	if err == nil {
		var rep cache.Report
		rep, err = c.Verify(ctx)
		if err != nil {
			err = fmt.Errorf("%w: %v", err, rep.Problems)
		}
		_ = c.Close()
	}
	if err != nil {
		t.Errorf("cache after the chaos: %v", err)
	}
}

// writeSummary logs a summary line and writes it to the file named by
// the environment variable env, when set (make chaos prints it).
func writeSummary(t *testing.T, env, summary string) {
	if path := os.Getenv(env); path != "" {
		_ = os.MkdirAll(filepath.Dir(path), 0o755)
		_ = os.WriteFile(path, []byte(summary+"\n"), 0o644)
	}
	t.Log(summary)
}

// checkKillErrors fails t for every failed call of ops but one kind: EIO
// from a call in flight at a kill (started before it, ended after it)
// while no FUSE process logged a failed operation (failed: their log
// lines). That one is the kernel's, a request it was copying to the
// dying process (docs/architecture.md, "A request copied at the kill"),
// and is counted apart. It returns the number of other errors and of
// those.
func checkKillErrors(t *testing.T, who string, ops []opRecord, kills []killAt, failed []string) (errs, kernelEIO int) {
	t.Helper()
	other, kernel := classifyKillErrors(ops, kills)
	for i, e := range other {
		if i < 10 {
			t.Errorf("%s error: %s", who, e)
		}
	}
	if len(kernel) > 0 {
		if len(failed) > 0 {
			t.Errorf("%d %s calls in flight at a kill failed with EIO (%q), and the FUSE processes logged failed operations: %q", len(kernel), who, kernel, failed)
		} else {
			t.Logf("%d %s calls in flight at a kill failed with EIO that no FUSE process answered (the kernel's copy of the request to the dying process): %q", len(kernel), who, kernel)
		}
	}
	return len(other), len(kernel)
}

// classifyKillErrors splits the failed calls of ops: EIO from a call in
// flight at a kill (between its at and deadBy) may be the kernel's failed
// copy of its request to the dying process; every other error is returned
// first.
func classifyKillErrors(ops []opRecord, kills []killAt) (other, kernelEIO []string) {
	for _, op := range ops {
		if op.Err == "" {
			continue
		}
		if strings.HasSuffix(op.Err, syscall.EIO.Error()) && slices.ContainsFunc(kills, func(k killAt) bool {
			return op.Start < k.deadBy().UnixNano() && k.at.UnixNano() < op.End
		}) {
			kernelEIO = append(kernelEIO, op.Err)
			continue
		}
		other = append(other, op.Err)
	}
	return other, kernelEIO
}

func TestClassifyKillErrors(t *testing.T) {
	at := time.Unix(0, 1000)
	kills := []killAt{{at: at, healed: at.Add(50)}, {at: time.Unix(0, 2000), dead: time.Unix(0, 2010), healed: time.Unix(0, 2050)}}
	eio := "write /x: " + syscall.EIO.Error()
	ops := []opRecord{
		{Start: 900, End: 1100, Err: eio},                                  // in flight at the kill
		{Start: 1001, End: 1100, Err: eio},                                 // started after it: resent, must not fail
		{Start: 900, End: 999, Err: eio},                                   // ended before it
		{Start: 900, End: 1100, Err: "close /x: " + syscall.EINTR.Error()}, // not EIO
		{Start: 900, End: 1100},
		{Start: 2005, End: 2100, Err: eio}, // started after the kill began, in flight when the processes died
		{Start: 2011, End: 2100, Err: eio}, // started after they died: resent, must not fail
	}
	other, kernel := classifyKillErrors(ops, kills)
	if len(kernel) != 2 || len(other) != 4 {
		t.Errorf("classifyKillErrors: kernel EIO %q, others %q; want 2 and the other 4", kernel, other)
	}
}

package chaos

import (
	"fmt"
	"reflect"
	"slices"
	"testing"
	"time"
)

// TestScheduleReplays: a seed gives the same schedule every time (a
// failing soak replays from its seed), another seed another one, and an
// hour's schedule holds every kind of fault, some overlapping.
func TestScheduleReplays(t *testing.T) {
	a, b := schedule(42, time.Hour, soakVolumes), schedule(42, time.Hour, soakVolumes)
	if !reflect.DeepEqual(a, b) {
		t.Fatal("two schedules of seed 42 differ")
	}
	if reflect.DeepEqual(a, schedule(43, time.Hour, soakVolumes)) {
		t.Fatal("seeds 42 and 43 give the same schedule")
	}
	kinds := map[string]int{}
	overlaps := 0
	for i, f := range a {
		kinds[f.Kind]++
		if f.Volume < 0 || f.Volume >= soakVolumes || f.At >= time.Hour {
			t.Fatalf("fault %+v out of range", f)
		}
		if i > 0 && a[i-1].At+a[i-1].For > f.At {
			overlaps++
		}
	}
	for _, k := range faultKinds {
		if kinds[k.name] == 0 {
			t.Errorf("an hour's schedule has no %s", k.name)
		}
	}
	if overlaps == 0 {
		t.Error("no fault overlaps the next one")
	}
}

// TestLedgerHolds: what the bucket may hold for an acknowledged change
// while the writer goes on, and at the end.
func TestLedgerHolds(t *testing.T) {
	l := newLedger("v", "w", nil)
	ck := ack{Op: "close", Name: "ckpt/ckpt-0.pt", Seed: 7, Size: soakCkptSize, Len: soakCkptSize, At: 10}
	half := ack{Op: "fsync", Name: ck.Name, Seed: 7, Size: soakCkptSize, Len: soakCkptSize / 2, At: 5}
	l.add(half)
	l.add(ck)
	whole := content(7, soakCkptSize)
	next := content(10, soakCkptSize) // the name's next version (3 apart)
	other := content(8, soakCkptSize)
	lg := ack{Op: "close", Name: "append/log-0", Seed: 9, Size: soakAppendMax, Len: 100, At: 20}
	l.add(lg)
	logData := content(9, soakAppendMax)
	gone := ack{Op: "unlink", Name: "small/f-0.bin", Deleted: true, At: 30}
	maybe := ack{Op: "unlink", Name: "small/f-1.bin", Seed: 11, Size: 100, Len: 100, Deleted: true, Maybe: true, At: 40}
	small := content(11, 100)
	for _, c := range []struct {
		name  string
		a     ack
		got   []byte
		final bool
		want  bool
	}{
		{"the close's content", ck, whole, false, true},
		{"the close's content, final", ck, whole, true, true},
		{"half, after the close was acknowledged", ck, whole[:soakCkptSize/2], false, false},
		{"the next version being written", ck, next[:soakCkptSize/2], false, true},
		{"the next version, final (a failed save that landed)", ck, next, true, true},
		{"another file's content", ck, other, false, false},
		{"nothing", ck, nil, false, false},
		{"the fsync's half, superseded by the close", half, whole, false, true},
		{"a longer part of the log", lg, logData[:300], false, true},
		{"a shorter part of the log", lg, logData[:50], false, false},
		{"a removed file still there", gone, []byte("x"), false, false},
		{"a removed file gone", gone, nil, true, true},
		{"a file whose unlink failed, gone", maybe, nil, true, true},
		{"a file whose unlink failed, still there", maybe, small, true, true},
		{"a file whose unlink failed, other content", maybe, small[:1], true, false},
	} {
		if got, why := l.holds(c.a, c.got, c.final); got != c.want {
			t.Errorf("%s: holds = %v (%s), want %v", c.name, got, why, c.want)
		}
	}
}

// TestInRemount: a call overlapping a remount of its volume, or ending
// within remountGrace of its heal, is the remount's; others are not.
func TestInRemount(t *testing.T) {
	at := time.Unix(100, 0)
	r := []killAt{{at: at, healed: at.Add(time.Second)}}
	ns := func(d time.Duration) int64 { return at.Add(d).UnixNano() }
	for _, c := range []struct {
		op   opRecord
		want bool
	}{
		{opRecord{Start: ns(-time.Second), End: ns(time.Millisecond)}, true},
		{opRecord{Start: ns(5 * time.Second), End: ns(5*time.Second + 1)}, true},
		{opRecord{Start: ns(-2 * time.Second), End: ns(-time.Second)}, false},
		{opRecord{Start: ns(time.Second + remountGrace + 1), End: ns(time.Minute)}, false},
		{opRecord{Start: ns(time.Second / 2), End: ns(time.Minute)}, false}, // a run going on after it

	} {
		if got := inRemount(c.op, r); got != c.want {
			t.Errorf("inRemount(%v..%v) = %v", time.Duration(c.op.Start-at.UnixNano()), time.Duration(c.op.End-at.UnixNano()), got)
		}
	}
}

// TestInStoreRestart: an EIO of a call overlapping a MinIO restart and
// ending by storeRestartGrace after it is the restart's; another error, a
// call before it, or one failing long after it is not.
func TestInStoreRestart(t *testing.T) {
	at := time.Unix(100, 0)
	r := []outage{{Start: at, End: at.Add(7 * time.Second)}}
	ns := func(d time.Duration) int64 { return at.Add(d).UnixNano() }
	const eio, exist = "open f: input/output error", "open f: file exists"
	for _, c := range []struct {
		op   opRecord
		want bool
	}{
		{opRecord{Start: ns(time.Second), End: ns(5 * time.Second), Err: eio}, true},
		{opRecord{Start: ns(-time.Second), End: ns(8 * time.Second), Err: eio}, true},
		{opRecord{Start: ns(time.Second), End: ns(5 * time.Second), Err: exist}, false},
		{opRecord{Start: ns(-3 * time.Second), End: ns(-time.Second), Err: eio}, false},
		{opRecord{Start: ns(time.Second), End: ns(7*time.Second + storeRestartGrace + 1), Err: eio}, false},
	} {
		if got := inStoreRestart(c.op, c.op.Err, r); got != c.want {
			t.Errorf("inStoreRestart(%v..%v, %q) = %v", time.Duration(c.op.Start-at.UnixNano()), time.Duration(c.op.End-at.UnixNano()), c.op.Err, got)
		}
	}
}

// TestStoreOutages: MinIO faults one after the other make one outage when
// a restart is among them; pauses alone make none.
func TestStoreOutages(t *testing.T) {
	at := time.Unix(100, 0)
	ev := func(kind string, from, to time.Duration) injected {
		return injected{fault: fault{Kind: kind}, Start: at.Add(from), End: at.Add(to)}
	}
	got := storeOutages([]injected{
		ev("minio-stop", 30*time.Second, 35*time.Second), // alone, later: none
		ev("minio-restart", 0, 5*time.Second),
		ev("minio-stop", 5*time.Second+500*time.Millisecond, 12*time.Second), // queued behind the restart
		ev("fuse-kill", 13*time.Second, 13*time.Second),
		ev("minio-restart", 12*time.Second+800*time.Millisecond, 20*time.Second),
		ev("minio-restart", 50*time.Second, 52*time.Second),
		{fault: fault{Kind: "minio-restart"}, Start: at.Add(60 * time.Second), End: at.Add(61 * time.Second), Skipped: "one of its kind still running"},
	})
	want := []outage{{Start: at, End: at.Add(20 * time.Second)}, {Start: at.Add(50 * time.Second), End: at.Add(52 * time.Second)}}
	if !slices.Equal(got, want) {
		t.Errorf("storeOutages = %v, want %v", got, want)
	}
}

// TestErrRuns: failures of one kind and error number close together make
// one run; another error number, another kind or a gap starts another.
func TestErrRuns(t *testing.T) {
	p := &statsPrinter{st: workerStats{Kinds: map[string]*opStats{}}}
	enotconn := func(name string) string { return "open " + name + ": transport endpoint is not connected" }
	at := int64(time.Hour)
	for i := range int64(1000) {
		p.add("read", opRecord{Start: at + i*1000, End: at + i*1000 + 500, Err: enotconn(fmt.Sprint(i))}, 0)
	}
	p.add("list", opRecord{Start: at, End: at + 1, Err: enotconn("d")}, 0)
	p.add("read", opRecord{Start: at + 2*errRunGap, End: at + 2*errRunGap + 1, Err: enotconn("x")}, 0)
	p.add("read", opRecord{Start: at + 2*errRunGap + 2, End: at + 2*errRunGap + 3, Err: "read x: input/output error"}, 0)
	runs := p.st.ErrOps
	if len(runs) != 4 || runs[0].Count != 1000 || runs[0].Start != at || runs[0].End != at+999*1000+500 {
		t.Fatalf("runs %+v: want 1000 reads in one run, then a list, a read after a gap, an EIO", runs)
	}
	if p.st.Kinds["read"].Errors != 1002 {
		t.Errorf("read errors %d, want 1002", p.st.Kinds["read"].Errors)
	}
}

package chaos

import (
	"reflect"
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
		{"the next version, final", ck, next, true, false},
		{"another file's content", ck, other, false, false},
		{"nothing", ck, nil, false, false},
		{"the fsync's half, superseded by the close", half, whole, false, true},
		{"a longer part of the log", lg, logData[:300], false, true},
		{"a shorter part of the log", lg, logData[:50], false, false},
		{"a removed file still there", gone, []byte("x"), false, false},
		{"a removed file gone", gone, nil, true, true},
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
	} {
		if got := inRemount(c.op, r); got != c.want {
			t.Errorf("inRemount(%v..%v) = %v", time.Duration(c.op.Start-at.UnixNano()), time.Duration(c.op.End-at.UnixNano()), got)
		}
	}
}

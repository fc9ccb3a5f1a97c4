package cache

import (
	"testing"
	"time"
)

// link models what n GETs in flight carry: perConn each, up to total.
type link struct{ perConn, total float64 }

func (l link) rate(n int) float64 { return min(float64(n)*l.perConn, l.total) }

// climb runs the tuner for samples periods of period against l, every
// sample saturated, and returns the limits it chose.
func climb(tu *tuner, l link, samples int, period time.Duration) []int {
	now := time.Unix(1000, 0)
	var limits []int
	for range samples {
		now = now.Add(period)
		limits = append(limits, tu.observe(now, l.rate(tu.limit), true))
	}
	return limits
}

func TestTunerClimbsWhileThroughputGrows(t *testing.T) {
	for _, tc := range []struct {
		name      string
		start, hi int
		link      link
		want      int // settled limit
	}{
		// The WAN emulator: 60 MB/s a connection, 1.2 GB/s in all.
		{"the link's aggregate stops it", 8, 64, link{60e6, 1.2e9}, 20},
		{"a wide link", 8, 256, link{60e6, 6e9}, 100},
		{"the bound stops it", 8, 16, link{60e6, 1.2e9}, 16},
		{"a flat link keeps the start", 8, 64, link{60e6, 300e6}, 8},
		{"from one", 1, 64, link{10e6, 100e6}, 10},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tu := newTuner(tc.start, tc.hi)
			limits := climb(&tu, tc.link, 40, 500*time.Millisecond)
			for _, l := range limits {
				if l > tc.hi || l < 1 {
					t.Fatalf("limit %d outside [1, %d]: %v", l, tc.hi, limits)
				}
			}
			// Past the climb the limit may probe one step up now and then,
			// but it settles where the throughput stopped growing.
			settled := limits[len(limits)-1]
			if tu.probing {
				settled = tu.baseLimit
			}
			if settled < tc.want || settled > tc.want*3/2 {
				t.Errorf("settled at %d, want %d (at most one step above it): %v", settled, tc.want, limits)
			}
			if tc.link.rate(settled) < tc.link.rate(tc.hi) {
				t.Errorf("settled at %d carrying %.0f, while %d carry %.0f: %v", settled, tc.link.rate(settled), tc.hi, tc.link.rate(tc.hi), limits)
			}
		})
	}
}

func TestTunerRaisesOnlyWhenSaturated(t *testing.T) {
	tu := newTuner(8, 64)
	now := time.Unix(1000, 0)
	for range 20 {
		now = now.Add(time.Second)
		if l := tu.observe(now, 100e6, false); l != 8 {
			t.Fatalf("raised to %d on samples where fetches never waited", l)
		}
	}
}

func TestTunerRevertsAFailedRaiseAndBacksOff(t *testing.T) {
	tu := newTuner(8, 64)
	now := time.Unix(1000, 0)
	step := func(d time.Duration, rate float64) int {
		now = now.Add(d)
		return tu.observe(now, rate, true)
	}
	if l := step(time.Second, 400e6); l != 12 {
		t.Fatalf("first saturated sample: limit %d, want 12", l)
	}
	if l := step(time.Second, 410e6); l != 8 {
		t.Fatalf("a raise that gained 2%% kept: limit %d, want back at 8", l)
	}
	// Held for tuneHold0 before the next raise, which is half as large.
	if l := step(tuneHold0/2, 400e6); l != 8 {
		t.Fatalf("raised again within the hold: %d", l)
	}
	if l := step(tuneHold0, 400e6); l != 10 {
		t.Fatalf("after the hold: limit %d, want a raise by a quarter to 10", l)
	}
	if l := step(time.Second, 400e6); l != 8 {
		t.Fatalf("second failed raise kept: %d", l)
	}
	// The hold doubled; the step is at its smallest, one eighth.
	if l := step(tuneHold0+tuneHold0/2, 400e6); l != 8 {
		t.Fatalf("raised before the doubled hold ended: %d", l)
	}
	if l := step(tuneHold0, 400e6); l != 9 {
		t.Fatalf("after the doubled hold: limit %d, want 9", l)
	}
	// A raise that pays resets the hold and climbs on by a doubled step.
	if l := step(time.Second, 500e6); l != 11 {
		t.Fatalf("a raise that paid: limit %d, want 11", l)
	}
	if tu.hold != tuneHold0 {
		t.Errorf("hold %v after a raise that paid, want %v", tu.hold, tuneHold0)
	}
}

func TestTunerHoldIsCapped(t *testing.T) {
	tu := newTuner(8, 64)
	now := time.Unix(1000, 0)
	for range 50 {
		now = now.Add(tuneHoldMax + time.Second)
		tu.observe(now, 400e6, true)
	}
	if tu.hold > tuneHoldMax {
		t.Errorf("hold %v above %v", tu.hold, tuneHoldMax)
	}
}

func TestTunerUnsaturatedSampleEndsAJudgement(t *testing.T) {
	tu := newTuner(8, 64)
	now := time.Unix(1000, 0)
	tu.observe(now, 400e6, true) // raises to 12
	now = now.Add(time.Second)
	if l := tu.observe(now, 100e6, false); l != 12 || tu.probing {
		t.Fatalf("after an unsaturated sample: limit %d, probing %v; want 12 kept, no judgement", l, tu.probing)
	}
	// The next saturated sample is a new base, not a judgement against 8.
	now = now.Add(time.Second)
	if l := tu.observe(now, 300e6, true); l != 18 {
		t.Errorf("limit %d, want a raise to 18 from the new base", l)
	}
}

func TestNewTunerBounds(t *testing.T) {
	for _, tc := range []struct{ start, hi, want int }{{8, 4, 4}, {0, 4, 1}, {8, 0, 1}, {8, 32, 8}} {
		if tu := newTuner(tc.start, tc.hi); tu.limit != tc.want {
			t.Errorf("newTuner(%d, %d).limit = %d, want %d", tc.start, tc.hi, tu.limit, tc.want)
		}
	}
}

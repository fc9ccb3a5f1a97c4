package cache

import "time"

// The fetch tuner decides how many ranged GETs a cache keeps in flight,
// from the throughput it measures (a target-throughput model in the spirit
// of Mountpoint for S3, which sizes its connections from a throughput goal;
// here the goal is found by measuring instead of configured). One GET
// carries at most what one connection carries (60 MB/s behind the WAN
// emulator, 30 ms before the first byte), so a link of 1.2 GB/s needs
// about 24 GETs of 8 MiB in flight while 8 carry at most 480 MB/s; but
// more GETs than the link, the disk or the CPU can serve only hold more
// buffers.
//
// The tuner climbs: every sample period (fetchSlots) it is told the bytes
// per second the GETs received and whether fetches waited for a slot for
// most of the period (saturated: the limit, not the readers, held them
// back). A saturated sample at a limit that has not been tried yet
// records the rate there and raises the limit by a step, at first half of
// it, up to hi. The next saturated sample judges the raise: if the rate
// grew by at least minGain of the proportional gain (from 8 to 12 GETs,
// 50 % × minGain), it becomes the new base and the limit rises again by
// a step twice as large (up to half); otherwise the limit goes back to the last good one, the
// step halves (down to an eighth of the limit, at least one GET: close to
// the link's capacity the gains are small, and a small raise can still
// show one) and the next raise waits for a hold that doubles after every
// failed raise (hold0 up to holdMax) and is reset by a successful one. An unsaturated sample says nothing about
// the limit (the readers asked for less): it ends a pending judgement.

// tuner is the fetch limit's hill climber. Not safe for concurrent use.
type tuner struct {
	// constant
	hi      int     // the largest limit
	minGain float64 // fraction of the proportional gain a raise must show
	hold0   time.Duration
	holdMax time.Duration

	limit     int
	baseLimit int     // limit of the last saturated sample that was not a failed raise
	baseRate  float64 // its bytes per second
	probing   bool    // limit was raised from baseLimit; the next saturated sample judges it
	holdUntil time.Time
	hold      time.Duration // the wait before a raise after the next failed one
	step      float64       // a raise adds this fraction of the limit
}

// Defaults of the tuner.
const (
	tuneMinGain = 0.3
	tuneHold0   = time.Second
	tuneHoldMax = 30 * time.Second
	tuneStep0   = 0.5
	tuneStepMin = 0.125
)

func newTuner(start, hi int) tuner {
	hi = max(1, hi)
	return tuner{hi: hi, minGain: tuneMinGain, hold0: tuneHold0, holdMax: tuneHoldMax,
		limit: min(max(1, start), hi), hold: tuneHold0, step: tuneStep0}
}

// observe takes the sample that ended at now, rate bytes per second, and
// returns the limit for the next one.
func (t *tuner) observe(now time.Time, rate float64, saturated bool) int {
	if !saturated {
		t.probing = false
		return t.limit
	}
	if t.probing {
		t.probing = false
		want := t.baseRate * (1 + t.minGain*(float64(t.limit)/float64(t.baseLimit)-1))
		if rate < want {
			t.limit = t.baseLimit // measured again there before the next raise
			t.holdUntil = now.Add(t.hold)
			t.hold = min(2*t.hold, t.holdMax)
			t.step = max(t.step/2, tuneStepMin)
			return t.limit
		}
		t.hold = t.hold0
		t.step = min(2*t.step, tuneStep0)
	}
	t.baseLimit, t.baseRate = t.limit, rate
	if t.limit < t.hi && !now.Before(t.holdUntil) {
		t.limit = min(t.hi, t.limit+max(1, int(float64(t.limit)*t.step)))
		t.probing = true
	}
	return t.limit
}

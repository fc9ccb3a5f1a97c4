package cache

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"k8s.io/klog/v2"
)

// fetchSlots bounds the ranged GETs of a cache in flight. The bound
// follows the tuner (fetchtune.go): every sample period it measures the
// bytes the GETs received and how long fetches waited for a slot, and
// the tuner raises the limit while the throughput grows with it.
//
// Waiting fetches are served fairly between objects: a freed slot goes to
// the waiting object with the fewest GETs in flight (the earliest waiter
// on a tie), so readers of several files at once share the slots, and
// with them the block buffers the GETs fill, instead of the reader with
// the largest prefetch window taking them all. A fetch never passes one
// that waits.
type fetchSlots struct {
	// constant
	volume string // for logs
	clock  func() time.Time
	period time.Duration // sample period

	received atomic.Int64 // bytes received since the sample began
	cur      atomic.Int64 // mirrors limit for lock-free reads

	mu sync.Mutex
	// guarded by mu
	tune     tuner
	limit    int
	inflight int // INVARIANT: inflight == sum of owners' inflight
	peak     int // highest inflight
	owners   map[*object]*slotOwner
	waiting  int    // queued waiters; INVARIANT: == sum of len(owner.queue)
	seq      uint64 // numbers waiters in arrival order
	// sample state
	sampleFrom time.Time
	waitFrom   time.Time     // when waiting last became positive
	waited     time.Duration // time in this sample with waiting > 0, up to waitFrom
}

// slotOwner is one object's share of the slots.
type slotOwner struct {
	inflight int
	queue    []*slotWaiter // FIFO
}

type slotWaiter struct {
	seq     uint64
	ready   chan struct{} // closed when granted
	granted bool          // guarded by fetchSlots.mu
}

// newFetchSlots starts with start slots and never allows more than hi.
func newFetchSlots(volume string, start, hi int, period time.Duration, clock func() time.Time) *fetchSlots {
	s := &fetchSlots{volume: volume, clock: clock, period: period, tune: newTuner(start, hi), owners: make(map[*object]*slotOwner)}
	s.limit = s.tune.limit
	s.cur.Store(int64(s.limit))
	s.sampleFrom = clock()
	return s
}

// current is the limit now.
func (s *fetchSlots) current() int { return int(s.cur.Load()) }

// peakInFlight is the most GETs that were in flight at once.
func (s *fetchSlots) peakInFlight() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.peak
}

// addReceived counts bytes a GET received.
func (s *fetchSlots) addReceived(n int) { s.received.Add(int64(n)) }

// acquire takes a slot for a GET of o, waiting for one until ctx ends.
func (s *fetchSlots) acquire(ctx context.Context, o *object) error {
	s.mu.Lock()
	now := s.clock()
	s.sampleLocked(now)
	if s.waiting == 0 && s.inflight < s.limit {
		s.grantLocked(o)
		s.mu.Unlock()
		return nil
	}
	s.seq++
	w := &slotWaiter{seq: s.seq, ready: make(chan struct{})}
	ow := s.ownerLocked(o)
	ow.queue = append(ow.queue, w)
	if s.waiting == 0 {
		s.waitFrom = now
	}
	s.waiting++
	s.mu.Unlock()

	select {
	case <-w.ready:
		return nil
	case <-ctx.Done():
	}
	s.mu.Lock()
	if w.granted {
		s.mu.Unlock()
		s.release(o)
		return ctx.Err()
	}
	ow = s.owners[o]
	for i, q := range ow.queue {
		if q == w {
			ow.queue = append(ow.queue[:i], ow.queue[i+1:]...)
			break
		}
	}
	s.dequeuedLocked(s.clock())
	s.dropIdleLocked(o, ow)
	s.mu.Unlock()
	return ctx.Err()
}

// release gives back a slot of o.
func (s *fetchSlots) release(o *object) {
	s.mu.Lock()
	defer s.mu.Unlock()
	ow := s.owners[o]
	ow.inflight--
	s.inflight--
	s.dropIdleLocked(o, ow)
	s.sampleLocked(s.clock())
	s.dispatchLocked()
}

func (s *fetchSlots) ownerLocked(o *object) *slotOwner {
	ow := s.owners[o]
	if ow == nil {
		ow = &slotOwner{}
		s.owners[o] = ow
	}
	return ow
}

func (s *fetchSlots) dropIdleLocked(o *object, ow *slotOwner) {
	if ow.inflight == 0 && len(ow.queue) == 0 {
		delete(s.owners, o)
	}
}

func (s *fetchSlots) grantLocked(o *object) {
	s.ownerLocked(o).inflight++
	s.inflight++
	s.peak = max(s.peak, s.inflight)
}

// dequeuedLocked counts a waiter that left the queue.
func (s *fetchSlots) dequeuedLocked(now time.Time) {
	s.waiting--
	if s.waiting == 0 {
		s.waited += now.Sub(s.waitFrom)
	}
}

// dispatchLocked grants free slots to waiters, fairly between objects.
func (s *fetchSlots) dispatchLocked() {
	for s.inflight < s.limit && s.waiting > 0 {
		var (
			best  *object
			bestO *slotOwner
		)
		for o, ow := range s.owners {
			if len(ow.queue) == 0 {
				continue
			}
			if bestO == nil || ow.inflight < bestO.inflight ||
				ow.inflight == bestO.inflight && ow.queue[0].seq < bestO.queue[0].seq {
				best, bestO = o, ow
			}
		}
		w := bestO.queue[0]
		bestO.queue[0] = nil
		bestO.queue = bestO.queue[1:]
		w.granted = true
		close(w.ready)
		s.dequeuedLocked(s.clock())
		s.grantLocked(best)
	}
}

// sampleLocked ends the sample period if it is over: the tuner judges
// its throughput and sets the limit for the next one.
func (s *fetchSlots) sampleLocked(now time.Time) {
	elapsed := now.Sub(s.sampleFrom)
	if elapsed < s.period {
		return
	}
	waited := s.waited
	if s.waiting > 0 {
		waited += now.Sub(s.waitFrom)
		s.waitFrom = now
	}
	rate := float64(s.received.Swap(0)) / elapsed.Seconds()
	s.sampleFrom, s.waited = now, 0
	if limit := s.tune.observe(now, rate, waited >= elapsed/2); limit != s.limit {
		klog.V(2).InfoS("Fetch limit changed", "volume", s.volume, "from", s.limit, "to", limit, "MBps", int(rate/1e6), "waited", waited.Round(time.Millisecond), "sample", elapsed.Round(time.Millisecond))
		s.limit = limit
		s.cur.Store(int64(limit))
		s.dispatchLocked()
	}
}

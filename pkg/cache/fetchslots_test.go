package cache

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"
)

// handClock is a clock tests move by hand.
type handClock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *handClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *handClock) Advance(d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	c.mu.Unlock()
}

// waitSlots waits until cond holds under s.mu.
func waitSlots(t *testing.T, s *fetchSlots, what string, cond func() bool) {
	t.Helper()
	waitFor(t, what, func() bool {
		s.mu.Lock()
		defer s.mu.Unlock()
		return cond()
	})
}

// queue starts n goroutines acquiring a slot for o; each sends o on got
// once granted.
func queue(s *fetchSlots, o *object, n int, got chan<- *object) {
	for range n {
		go func() {
			if s.acquire(context.Background(), o) == nil {
				got <- o
			}
		}()
	}
}

// hold takes n slots for o.
func hold(t *testing.T, s *fetchSlots, o *object, n int) {
	t.Helper()
	for range n {
		if err := s.acquire(context.Background(), o); err != nil {
			t.Fatal(err)
		}
	}
}

func TestFetchSlotsBoundInFlight(t *testing.T) {
	clk := &handClock{now: time.Unix(1000, 0)}
	s := newFetchSlots("v", 2, 8, time.Hour, clk.Now)
	o := &object{}
	hold(t, s, o, 2)
	got := make(chan *object, 1)
	queue(s, o, 1, got)
	waitSlots(t, s, "the third fetch to queue", func() bool { return s.waiting == 1 })
	select {
	case <-got:
		t.Fatal("a third fetch ran with a limit of 2")
	case <-time.After(20 * time.Millisecond):
	}
	s.release(o)
	<-got
	if s.current() != 2 || s.peakInFlight() != 2 {
		t.Errorf("limit %d, peak %d; want 2 and 2", s.current(), s.peakInFlight())
	}
}

// TestFetchSlotsShareFairly checks that a freed slot goes to the waiting
// object with the fewest GETs in flight, not to the one that queued first
// or most.
func TestFetchSlotsShareFairly(t *testing.T) {
	clk := &handClock{now: time.Unix(1000, 0)}
	s := newFetchSlots("v", 4, 8, time.Hour, clk.Now)
	a, b := &object{}, &object{}
	hold(t, s, a, 4)
	got := make(chan *object, 20)
	queue(s, a, 10, got)
	waitSlots(t, s, "a's fetches to queue", func() bool { return s.waiting == 10 })
	queue(s, b, 10, got)
	waitSlots(t, s, "b's fetches to queue", func() bool { return s.waiting == 20 })
	for i := range 2 {
		s.release(a)
		if o := <-got; o != b {
			t.Fatalf("slot %d freed by a went to a (a: %d in flight, b: %d)", i, s.owners[a].inflight, i)
		}
	}
	// Now a and b have 2 each: a's first waiter is older, so it goes next,
	// then b's.
	s.release(a)
	if o := <-got; o != a {
		t.Fatal("with 2 each in flight, the slot went to the later waiter")
	}
	s.release(b)
	if o := <-got; o != b {
		t.Fatal("b released and a has more in flight, yet a got the slot")
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.inflight != 4 || s.owners[a].inflight != 2 || s.owners[b].inflight != 2 || s.waiting != 16 {
		t.Errorf("in flight %d (a %d, b %d), waiting %d; want 4 (2, 2), 16", s.inflight, s.owners[a].inflight, s.owners[b].inflight, s.waiting)
	}
}

func TestFetchSlotsCancelledWaiterLeaves(t *testing.T) {
	clk := &handClock{now: time.Unix(1000, 0)}
	s := newFetchSlots("v", 1, 8, time.Hour, clk.Now)
	o, p := &object{}, &object{}
	if err := s.acquire(context.Background(), o); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error)
	go func() { done <- s.acquire(ctx, p) }()
	waitSlots(t, s, "the fetch to queue", func() bool { return s.waiting == 1 })
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled acquire returned %v", err)
	}
	s.release(o)
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.waiting != 0 || s.inflight != 0 || len(s.owners) != 0 {
		t.Errorf("after the cancel and release: waiting %d, in flight %d, owners %d; want all 0", s.waiting, s.inflight, len(s.owners))
	}
}

// TestFetchSlotsRaiseWhenThroughputGrows drives the sampling with a fake
// clock: fetches that wait all period long at a growing rate raise the
// limit and the raise lets waiters run at once; a period without waiters
// keeps it.
func TestFetchSlotsRaiseWhenThroughputGrows(t *testing.T) {
	clk := &handClock{now: time.Unix(1000, 0)}
	s := newFetchSlots("v", 2, 3, time.Second, clk.Now)
	o := &object{}
	hold(t, s, o, 2)
	// A period without waiters: no raise.
	clk.Advance(time.Second)
	s.addReceived(100 << 20)
	s.release(o)
	if err := s.acquire(context.Background(), o); err != nil {
		t.Fatal(err)
	}
	if s.current() != 2 {
		t.Fatalf("limit %d after a period nobody waited, want 2", s.current())
	}
	got := make(chan *object, 4)
	queue(s, o, 2, got)
	waitSlots(t, s, "two fetches to queue", func() bool { return s.waiting == 2 })
	clk.Advance(time.Second)
	s.addReceived(100 << 20)
	s.release(o) // ends the period: saturated, raises to 3
	for range 2 {
		<-got
	}
	if s.current() != 3 || s.peakInFlight() != 3 {
		t.Errorf("limit %d, peak %d; want 3 and 3 (the bound)", s.current(), s.peakInFlight())
	}
}

package chaos

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"path"
	"sync"
	"time"

	"github.com/basin-csi/basin/pkg/objstore"
)

// ledger keeps every acknowledged change of one volume's writer and
// checks that the bucket holds it: continuously, each acknowledgement a
// little after it was made, and at the end, the last one of every name.
// A change is lost when the bucket holds neither it nor a version written
// after it (the writer may have gone on already).
type ledger struct {
	volume string
	prefix string // the writer's directory in the bucket
	store  objstore.Store
	logf   func(format string, args ...any) // nil: quiet

	looping chan struct{} // closed when verifyLoop returned

	mu       sync.Mutex
	last     map[string]ack // per name, the last acknowledgement
	pending  []ack          // to check in the bucket
	acks     int64
	verified int64
	lost     []string // descriptions of lost acknowledged changes
	reported map[ack]bool
}

func newLedger(volume, prefix string, store objstore.Store) *ledger {
	return &ledger{volume: volume, prefix: prefix, store: store, last: map[string]ack{}, reported: map[ack]bool{}, looping: make(chan struct{})}
}

// add records an acknowledgement.
func (l *ledger) add(a ack) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.last[a.Name] = a
	l.pending = append(l.pending, a)
	l.acks++
}

// verifyLoop checks pending acknowledgements until ctx ends, each at
// least settle after it was made.
func (l *ledger) verifyLoop(ctx context.Context, settle time.Duration) {
	defer close(l.looping)
	for ctx.Err() == nil {
		l.mu.Lock()
		var next []ack
		now := time.Now().UnixNano()
		for len(l.pending) > 0 && now-l.pending[0].At > settle.Nanoseconds() && len(next) < 64 {
			next, l.pending = append(next, l.pending[0]), l.pending[1:]
		}
		l.mu.Unlock()
		for _, a := range next {
			l.check(ctx, a, false)
		}
		select {
		case <-ctx.Done():
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// check looks for a in the bucket for up to a minute (the store may be
// paused, a later version may be on its way). final: the writer stopped,
// only a itself will do.
func (l *ledger) check(ctx context.Context, a ack, final bool) {
	l.checkWithin(ctx, a, final, time.Minute)
}

// checkWithin is check giving up after patience.
func (l *ledger) checkWithin(ctx context.Context, a ack, final bool, patience time.Duration) {
	deadline := time.Now().Add(patience)
	var why string
	for attempt := 0; ; attempt++ {
		got, err := l.read(ctx, a.Name)
		ok := false
		switch {
		case err != nil:
			why = err.Error()
		default:
			ok, why = l.holds(a, got, final)
		}
		if ok {
			l.mu.Lock()
			l.verified++
			l.mu.Unlock()
			return
		}
		if attempt == 0 && l.logf != nil && ctx.Err() == nil {
			l.logf("%s: %s %s (final %v) not found yet: %s", l.volume, a.Op, a.Name, final, why)
		}
		if ctx.Err() != nil && !final {
			// The soak ends: finish checks it again.
			l.mu.Lock()
			l.pending = append(l.pending, a)
			l.mu.Unlock()
			return
		}
		if time.Now().After(deadline) {
			break
		}
		time.Sleep(time.Second)
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.reported[a] {
		return // checked while pending and again as the name's last
	}
	l.reported[a] = true
	l.lost = append(l.lost, fmt.Sprintf("%s: %s %s acknowledged at %s: %s", l.volume, a.Op, a.Name,
		time.Unix(0, a.At).UTC().Format("15:04:05.000"), why))
}

// holds reports whether got (nil: no object) satisfies a, and if not,
// why.
func (l *ledger) holds(a ack, got []byte, final bool) (bool, string) {
	l.mu.Lock()
	newer := l.last[a.Name].At > a.At
	l.mu.Unlock()
	if a.Deleted {
		if got == nil || a.Maybe && bytes.Equal(got, content(a.Seed, a.Size)[:a.Len]) {
			return true, ""
		}
		return false, fmt.Sprintf("removed, but the bucket holds %d bytes", len(got))
	}
	if got == nil {
		if newer && !final {
			return true, "" // removed since (small files): the newer ack is checked
		}
		return false, "not in the bucket"
	}
	want := content(a.Seed, a.Size)[:a.Len]
	if bytes.Equal(got, want) {
		return true, ""
	}
	if !final && newer || successor(a, got) {
		// Replaced since, or being replaced; at the end, a later version
		// whose call failed (not acknowledged, but it may have landed).
		return true, ""
	}
	return false, fmt.Sprintf("the bucket holds %d bytes (%s), want %d bytes (%s)", len(got), short(sum(got)), len(want), short(sum(want)))
}

// successor reports whether got is a version the writer makes after a:
// a longer part of the same log, or a later checkpoint of that name
// (versions of a name are 3 apart), half or whole.
func successor(a ack, got []byte) bool {
	full := content(a.Seed, a.Size)
	if a.Size == soakAppendMax && len(got) > a.Len && len(got) <= len(full) && bytes.Equal(got, full[:len(got)]) {
		return true
	}
	for k := uint64(1); k <= 2; k++ {
		next := content(a.Seed+3*k, a.Size)
		if bytes.Equal(got, next) || bytes.Equal(got, next[:a.Size/2]) {
			return true
		}
	}
	return false
}

// read returns an object's content, nil when there is none.
func (l *ledger) read(ctx context.Context, name string) ([]byte, error) {
	ctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	rc, _, err := l.store.Read(ctx, path.Join(l.prefix, name), objstore.ReadOptions{Length: -1})
	if errors.Is(err, objstore.ErrNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	defer func() { _ = rc.Close() }()
	return io.ReadAll(rc)
}

// finish checks what is still pending and then the last acknowledgement
// of every name, the writer having stopped.
func (l *ledger) finish(ctx context.Context) {
	<-l.looping // its ctx ended: it put back what it was checking
	l.mu.Lock()
	pending := l.pending
	l.pending = nil
	last := make([]ack, 0, len(l.last))
	for _, a := range l.last {
		last = append(last, a)
	}
	l.mu.Unlock()
	// The faults are over and the writer stopped: a short wait each.
	for _, a := range pending {
		l.checkWithin(ctx, a, false, 10*time.Second)
	}
	for _, a := range last {
		l.checkWithin(ctx, a, true, 10*time.Second)
	}
}

// counts returns the acknowledgements, the checks passed and the lost
// changes.
func (l *ledger) counts() (acks, verified int64, lost []string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.acks, l.verified, append([]string(nil), l.lost...)
}

package tier

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"k8s.io/klog/v2"

	"github.com/basin-csi/basin/pkg/objstore"
)

// Options tune a Tier; zero values mean the defaults.
type Options struct {
	// VolumeID names the volume in logs.
	VolumeID string
	// OpTimeout bounds one tier GET with its body (default 2 s),
	// PutTimeout one upload (default 15 s).
	OpTimeout, PutTimeout time.Duration
	// MaxGets bounds the GETs in flight (default 32).
	MaxGets int
	// MaxQueue bounds the runs queued for upload (default 4096; a queued
	// run is a reference to the cache's data file, not its bytes);
	// Uploaders is how many upload at once, each holding one run's bytes
	// (default 2).
	MaxQueue  int
	Uploaders int
	// Trip errors in a row make the tier skipped for Pause (defaults 3
	// and 5 s).
	Trip  int
	Pause time.Duration
	// RefreshAfter: a hit on a tier object last stored longer ago asks
	// the caller to store it again (Refresh), so that its last-modified
	// time follows its use and a bucket lifecycle rule expiring objects
	// some days after it removes those nobody read since (default 24 h).
	RefreshAfter time.Duration
	// ColdAfter misses in a row (no object, default 64) make Get look up
	// only one run in Sample (default 16) until a lookup hits: the first
	// node to read a data set does not pay a tier lookup per block, and
	// finds the tier again as soon as another node filled it.
	ColdAfter, Sample int
	// Now is the clock (tests); nil means time.Now.
	Now func() time.Time
}

// Defaults of Options.
const (
	DefaultOpTimeout    = 2 * time.Second
	DefaultPutTimeout   = 15 * time.Second
	DefaultMaxGets      = 32
	DefaultMaxQueue     = 4096
	DefaultUploaders    = 2
	DefaultTrip         = 3
	DefaultPause        = 5 * time.Second
	DefaultColdAfter    = 64
	DefaultRefreshAfter = 24 * time.Hour
	DefaultSample       = 16
)

func (o Options) withDefaults() Options {
	if o.OpTimeout <= 0 {
		o.OpTimeout = DefaultOpTimeout
	}
	if o.PutTimeout <= 0 {
		o.PutTimeout = DefaultPutTimeout
	}
	if o.MaxGets <= 0 {
		o.MaxGets = DefaultMaxGets
	}
	if o.MaxQueue <= 0 {
		o.MaxQueue = DefaultMaxQueue
	}
	if o.Uploaders <= 0 {
		o.Uploaders = DefaultUploaders
	}
	if o.Trip <= 0 {
		o.Trip = DefaultTrip
	}
	if o.Pause <= 0 {
		o.Pause = DefaultPause
	}
	if o.RefreshAfter <= 0 {
		o.RefreshAfter = DefaultRefreshAfter
	}
	if o.ColdAfter <= 0 {
		o.ColdAfter = DefaultColdAfter
	}
	if o.Sample <= 0 {
		o.Sample = DefaultSample
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	return o
}

// Stats are a Tier's counters; the gauges are current values.
type Stats struct {
	Hits, Misses, HitBytes int64 // Gets that returned blocks, Gets that did not, bytes returned
	Errors                 int64 // requests that failed (a miss for the reader) or were skipped while degraded
	Corrupt                int64 // objects that failed their identity or checksum check
	ColdSkips              int64 // lookups left out (counted as misses) while the tier was cold for this volume
	Filled, FilledBytes    int64 // runs (and their bytes) stored in the tier
	FillExisting           int64 // fills another node had stored first
	Refreshed              int64 // runs stored again because a hit found them older than RefreshAfter
	FillDropped            int64 // runs not stored: the queue was full, the tier degraded, the local bytes gone
	QueueDepth, QueueBytes int64 // runs queued or uploading, and their bytes (in the data files while queued)
	Degraded               bool  // the last request failed, or the tier is skipped
}

// Tier is one volume's view of the shared cache tier. Methods are safe for
// concurrent use.
type Tier struct {
	// constant
	store objstore.Store
	opts  Options
	gets  chan struct{} // bounds GETs in flight
	queue chan *offer
	ctx   context.Context
	stop  context.CancelFunc
	wg    sync.WaitGroup

	// queueLen and queueBytes count the offers queued or uploading and
	// their runs' bytes.
	queueBytes, queueLen atomic.Int64
	// streak is the number of failed requests in a row; skipUntil (Unix
	// nanoseconds) the end of the pause it tripped.
	streak, skipUntil atomic.Int64
	// absent counts lookups in a row that found no object; past
	// ColdAfter, sample picks the lookups that are made.
	absent, sample atomic.Int64

	hits, misses, hitBytes, errs, corrupt, cold atomic.Int64
	filled, filledBytes, existing, drop         atomic.Int64
	refreshed                                   atomic.Int64
}

// New returns a Tier over store (the tier bucket, under its prefix) and
// starts its uploaders; Close stops them. The Tier does not close store.
func New(store objstore.Store, opts Options) *Tier {
	opts = opts.withDefaults()
	ctx, stop := context.WithCancel(context.Background())
	t := &Tier{store: store, opts: opts, gets: make(chan struct{}, opts.MaxGets),
		queue: make(chan *offer, opts.MaxQueue), ctx: ctx, stop: stop}
	for range opts.Uploaders {
		t.wg.Go(t.upload)
	}
	return t
}

// Close drops the fills still queued and waits for the uploads under way
// (each bounded by OpTimeout).
func (t *Tier) Close() {
	t.stop()
	t.wg.Wait()
	for {
		select {
		case o := <-t.queue:
			t.done(o.id)
		default:
			return
		}
	}
}

// Stats returns a snapshot of the counters.
func (t *Tier) Stats() Stats {
	return Stats{
		Hits: t.hits.Load(), Misses: t.misses.Load(), HitBytes: t.hitBytes.Load(),
		Errors: t.errs.Load(), Corrupt: t.corrupt.Load(), ColdSkips: t.cold.Load(),
		Filled: t.filled.Load(), FilledBytes: t.filledBytes.Load(),
		FillExisting: t.existing.Load(), FillDropped: t.drop.Load(), Refreshed: t.refreshed.Load(),
		QueueDepth: t.queueLen.Load(), QueueBytes: t.queueBytes.Load(),
		Degraded: t.streak.Load() > 0,
	}
}

// usable reports whether requests may go to the tier now: not while a
// pause tripped by errors in a row lasts.
func (t *Tier) usable() bool {
	return t.opts.Now().UnixNano() >= t.skipUntil.Load()
}

// succeeded and failed keep the health state.
func (t *Tier) succeeded() { t.streak.Store(0) }

func (t *Tier) failed(what string, err error) {
	t.errs.Add(1)
	if n := t.streak.Add(1); n%int64(t.opts.Trip) == 0 {
		t.skipUntil.Store(t.opts.Now().Add(t.opts.Pause).UnixNano())
		klog.InfoS("Shared cache tier failing; reading from the origin only for a while", "volume", t.opts.VolumeID,
			"errorsInARow", n, "pause", t.opts.Pause, "op", what, "err", err)
	}
}

// Get reads the run id names into bufs (one buffer per block, each of the
// block's length) and returns the blocks' CRC32Cs, or ok false on a miss
// of any kind, with bufs' content undefined. stale says the tier object
// was stored longer than RefreshAfter ago: the caller should Refresh it.
// It returns within OpTimeout.
func (t *Tier) Get(ctx context.Context, id Identity, bufs [][]byte) (crcs []uint32, stale, ok bool) {
	if !id.valid() || !t.usable() {
		t.misses.Add(1)
		return nil, false, false
	}
	if t.absent.Load() >= int64(t.opts.ColdAfter) && t.sample.Add(1)%int64(t.opts.Sample) != 0 {
		t.cold.Add(1)
		t.misses.Add(1)
		return nil, false, false
	}
	select {
	case t.gets <- struct{}{}:
	case <-ctx.Done():
		t.misses.Add(1)
		return nil, false, false
	}
	defer func() { <-t.gets }()
	parent := ctx
	ctx, cancel := context.WithTimeout(ctx, t.opts.OpTimeout)
	defer cancel()
	crcs, stored, err := t.get(ctx, id, bufs)
	switch {
	case err == nil:
		t.succeeded()
		t.absent.Store(0)
		t.hits.Add(1)
		t.hitBytes.Add(id.Len())
		return crcs, !stored.IsZero() && t.opts.Now().Sub(stored) > t.opts.RefreshAfter, true
	case errors.Is(err, objstore.ErrNotFound):
		t.succeeded()
		t.absent.Add(1)
	case errors.Is(err, errCorrupt):
		t.succeeded()
		t.corrupt.Add(1)
		klog.V(2).InfoS("Shared cache tier object failed its check; reading from the origin", "volume", t.opts.VolumeID,
			"key", id.Key, "first", id.First, "object", id.ObjectKey())
	case parent.Err() != nil:
		// the caller's context ended (the cache closes): not the tier's fault
	default:
		t.failed("get", err)
	}
	t.misses.Add(1)
	return nil, false, false
}

func (t *Tier) get(ctx context.Context, id Identity, bufs [][]byte) ([]uint32, time.Time, error) {
	rc, info, err := t.store.Read(ctx, id.ObjectKey(), objstore.ReadOptions{Length: -1})
	if err != nil {
		return nil, time.Time{}, err
	}
	defer func() { _ = rc.Close() }()
	crcs, err := decode(rc, id, bufs)
	if err != nil && ctx.Err() != nil {
		return nil, time.Time{}, fmt.Errorf("tier: read %s: %w", id.ObjectKey(), ctx.Err())
	}
	return crcs, info.ModTime, err
}

package tier

import (
	"context"
	"errors"
	"hash/crc32"
	"io"
	"testing"
	"time"

	"github.com/basin-csi/basin/pkg/objstore"
	"github.com/basin-csi/basin/pkg/objstore/objstoretest"
)

// gatedStore holds every Put until gate is closed, telling entered.
type gatedStore struct {
	objstore.Store
	gate, entered chan struct{}
}

func (s gatedStore) Put(ctx context.Context, key string, body io.Reader, o objstore.PutOptions) (objstore.ObjectInfo, error) {
	select {
	case s.entered <- struct{}{}:
	default:
	}
	select {
	case <-s.gate:
	case <-ctx.Done():
		return objstore.ObjectInfo{}, ctx.Err()
	}
	return s.Store.Put(ctx, key, body, o)
}

func blockID(key string, b int) Identity {
	return Identity{Origin: "o", Key: key, Version: "v", Size: 1 << 20, BlockSize: 64 << 10, First: b, Blocks: 1}
}

func fillBlock(tr *Tier, id Identity) bool {
	buf := make([]byte, id.Len())
	return tr.Offer(id, []uint32{crc32.Checksum(buf, castagnoli)}, func(b []byte) error { copy(b, buf); return nil })
}

// waitFor polls cond (the uploads run in the background).
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(time.Minute); !cond(); time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
	}
}

func TestFillIsBoundedAndNeverWaits(t *testing.T) {
	gate, entered := make(chan struct{}), make(chan struct{}, 1)
	fake := objstoretest.NewFake()
	tr := New(gatedStore{fake, gate, entered}, Options{MaxQueue: 3, Uploaders: 1, PutTimeout: time.Minute})
	defer tr.Close()
	accepted := 0
	if fillBlock(tr, blockID("k", 0)) {
		accepted++
	}
	<-entered                 // the uploader holds it
	for b := 1; b < 10; b++ { // the store holds every upload: none completes
		if fillBlock(tr, blockID("k", b)) {
			accepted++
		}
	}
	// One uploader holds one run, the queue three more.
	s := tr.Stats()
	if accepted != 4 || s.FillDropped != 6 || s.QueueDepth != 4 || s.QueueBytes != 4*64<<10 {
		t.Fatalf("accepted %d, stats %+v; want 4 (one uploading, 3 queued), 6 dropped", accepted, s)
	}
	close(gate)
	waitFor(t, "the uploads", func() bool { return tr.Stats().QueueDepth == 0 })
	s = tr.Stats()
	if s.Filled != 4 || s.QueueBytes != 0 {
		t.Fatalf("after the uploads: %+v", s)
	}
	// A block stored already (another node's) is stored once.
	fillBlock(tr, blockID("k", 0))
	waitFor(t, "the upload", func() bool { return tr.Stats().QueueDepth == 0 })
	if s := tr.Stats(); s.FillExisting != 1 || s.Filled != 4 {
		t.Errorf("refill of a stored block: %+v; want it counted as existing", s)
	}
	// Bytes that no longer match their CRC32C are not uploaded.
	id := blockID("k", 9)
	tr.Offer(id, []uint32{1}, func(b []byte) error { return nil })
	waitFor(t, "the upload", func() bool { return tr.Stats().QueueDepth == 0 })
	if s := tr.Stats(); s.Filled != 4 || s.FillDropped != 7 {
		t.Errorf("a stale run: %+v; want it dropped", s)
	}
	// What was stored reads back.
	id = blockID("k", 1)
	buf := make([]byte, id.Len())
	if _, _, ok := tr.Get(context.Background(), id, [][]byte{buf}); !ok {
		t.Error("a filled block is a miss")
	}
}

// failingStore fails every request.
type failingStore struct{ objstore.Store }

func (failingStore) Read(context.Context, string, objstore.ReadOptions) (io.ReadCloser, objstore.ObjectInfo, error) {
	return nil, objstore.ObjectInfo{}, errors.Join(objstore.ErrUnavailable)
}

func TestTripSkipsTheTier(t *testing.T) {
	now := time.Unix(1000, 0)
	tr := New(failingStore{objstoretest.NewFake()}, Options{Trip: 3, Pause: 5 * time.Second, Now: func() time.Time { return now }})
	defer tr.Close()
	id := blockID("k", 0)
	buf := make([]byte, id.Len())
	for range 5 {
		if _, _, ok := tr.Get(context.Background(), id, [][]byte{buf}); ok {
			t.Fatal("hit from a failing store")
		}
	}
	s := tr.Stats()
	if s.Errors != 3 || s.Misses != 5 || !s.Degraded {
		t.Fatalf("stats %+v; want 3 errors (then skipped), 5 misses, degraded", s)
	}
	if tr.Offer(id, []uint32{0}, func([]byte) error { return nil }) {
		t.Error("a fill was accepted while the tier is skipped")
	}
	now = now.Add(6 * time.Second) // the pause is over: one more try
	tr.Get(context.Background(), id, [][]byte{buf})
	if s := tr.Stats(); s.Errors != 4 {
		t.Errorf("after the pause: %+v; want one more request", s)
	}
}

func TestColdTierSamplesLookups(t *testing.T) {
	tr := New(objstoretest.NewFake(), Options{ColdAfter: 4, Sample: 8})
	defer tr.Close()
	buf := make([]byte, 64<<10)
	for b := range 4 + 16 { // 4 real misses, then one lookup in 8
		tr.Get(context.Background(), blockID("k", b%16), [][]byte{buf})
	}
	if s := tr.Stats(); s.Misses != 20 || s.ColdSkips != 14 {
		t.Fatalf("stats %+v; want 20 misses, 14 of them without a lookup", s)
	}
	// Another node fills the tier: the next sampled lookup hits, and
	// every lookup is made again.
	fillBlock(tr, blockID("k", 15))
	waitFor(t, "the upload", func() bool { return tr.Stats().QueueDepth == 0 })
	hits := 0
	for range 8 {
		if _, _, ok := tr.Get(context.Background(), blockID("k", 15), [][]byte{buf}); ok {
			hits++
		}
	}
	if hits != 1 {
		t.Fatalf("%d hits among 8 cold lookups of a stored run; want the sampled one", hits)
	}
	if _, _, ok := tr.Get(context.Background(), blockID("k", 15), [][]byte{buf}); !ok {
		t.Error("after a hit, lookups are still sampled")
	}
}

// TestStaleHitIsRefreshed: a hit on an object stored longer than
// RefreshAfter ago says so, and Refresh stores it again even though the
// key exists, renewing its last-modified time.
func TestStaleHitIsRefreshed(t *testing.T) {
	fake := objstoretest.NewFake()
	now := time.Now()
	clock := func() time.Time { return now }
	tr := New(fake, Options{RefreshAfter: time.Hour, Now: clock})
	defer tr.Close()
	id := blockID("k", 3)
	fillBlock(tr, id)
	waitFor(t, "the upload", func() bool { return tr.Stats().QueueDepth == 0 })
	buf := make([]byte, id.Len())
	if crcs, stale, ok := tr.Get(context.Background(), id, [][]byte{buf}); !ok || stale || len(crcs) != 1 {
		t.Fatalf("fresh hit: ok %v stale %v", ok, stale)
	}
	before, err := fake.Stat(context.Background(), id.ObjectKey())
	if err != nil {
		t.Fatal(err)
	}
	now = now.Add(2 * time.Hour)
	crcs, stale, ok := tr.Get(context.Background(), id, [][]byte{buf})
	if !ok || !stale {
		t.Fatalf("hit two hours later: ok %v stale %v; want a stale hit", ok, stale)
	}
	time.Sleep(10 * time.Millisecond) // a later last-modified time than the first upload's
	tr.Refresh(id, crcs, func(b []byte) error { copy(b, buf); return nil })
	waitFor(t, "the refresh", func() bool { return tr.Stats().QueueDepth == 0 })
	after, err := fake.Stat(context.Background(), id.ObjectKey())
	if err != nil {
		t.Fatal(err)
	}
	if s := tr.Stats(); s.Refreshed != 1 || s.FillExisting != 0 || !after.ModTime.After(before.ModTime) {
		t.Errorf("stats %+v, modified %v then %v; want one refresh that renewed the time", s, before.ModTime, after.ModTime)
	}
}

// resetStore fails every conditional PUT of a key it holds the way MinIO
// does with large bodies: a connection reset, not ErrExists.
type resetStore struct{ objstore.Store }

func (s resetStore) Put(ctx context.Context, key string, body io.Reader, o objstore.PutOptions) (objstore.ObjectInfo, error) {
	if _, err := s.Stat(ctx, key); err == nil && o.IfAbsent {
		return objstore.ObjectInfo{}, errors.New("write tcp 127.0.0.1:1->127.0.0.1:2: write: connection reset by peer")
	}
	return s.Store.Put(ctx, key, body, o)
}

// TestLostRaceIsNoFailure: a conditional PUT of a block another node
// stored meanwhile that ends in a reset counts as stored, not as a tier
// failure (three of those in a row would trip the tier); a reset of a
// block the tier does not hold is a failure.
func TestLostRaceIsNoFailure(t *testing.T) {
	fake := objstoretest.NewFake()
	tr := New(resetStore{fake}, Options{MaxQueue: 8, Uploaders: 1, PutTimeout: time.Minute})
	defer tr.Close()
	for b := range 4 {
		fillBlock(tr, blockID("k", b))
	}
	waitFor(t, "the first uploads", func() bool { s := tr.Stats(); return s.Filled == 4 && s.QueueDepth == 0 })
	for b := range 4 { // other nodes' copies: every PUT is reset
		fillBlock(tr, blockID("k", b))
	}
	waitFor(t, "the racing uploads", func() bool { return tr.Stats().FillExisting == 4 })
	if s := tr.Stats(); s.Errors != 0 || s.Degraded {
		t.Fatalf("lost races counted as failures: %+v", s)
	}
	// A reset PUT of a block the tier does not hold is a failure.
	fake.SetHook(func(_ context.Context, op objstoretest.Op, _ string) error {
		if op == objstoretest.OpPut {
			return errors.New("connection reset by peer")
		}
		return nil
	})
	fillBlock(tr, blockID("k", 9))
	waitFor(t, "the failed upload", func() bool { return tr.Stats().Errors == 1 })
}

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

// gatedStore holds every Put until gate is closed.
type gatedStore struct {
	objstore.Store
	gate chan struct{}
}

func (s gatedStore) Put(ctx context.Context, key string, body io.Reader, o objstore.PutOptions) (objstore.ObjectInfo, error) {
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
	f := tr.StartFill(id)
	if f == nil {
		return false
	}
	buf := make([]byte, id.Len())
	f.Add(buf, crc32.Checksum(buf, castagnoli))
	f.Done()
	return true
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
	gate := make(chan struct{})
	fake := objstoretest.NewFake()
	tr := New(gatedStore{fake, gate}, Options{MaxQueue: 4, MaxQueueBytes: 3 * 64 << 10, Uploaders: 1, PutTimeout: time.Minute})
	defer tr.Close()
	accepted := 0
	for b := range 10 { // the store holds every upload: none completes
		if fillBlock(tr, blockID("k", b)) {
			accepted++
		}
	}
	s := tr.Stats()
	if accepted != 3 || s.FillDropped != 7 || s.QueueBytes != 3*64<<10 || s.QueueDepth != 3 {
		t.Fatalf("accepted %d, stats %+v; want 3 within the byte budget, 7 dropped", accepted, s)
	}
	close(gate)
	waitFor(t, "the uploads", func() bool { return tr.Stats().QueueDepth == 0 })
	s = tr.Stats()
	if s.Filled != 3 || s.QueueBytes != 0 {
		t.Fatalf("after the uploads: %+v", s)
	}
	// A block stored already (another node's) is stored once.
	fillBlock(tr, blockID("k", 0))
	waitFor(t, "the upload", func() bool { return tr.Stats().QueueDepth == 0 })
	if s := tr.Stats(); s.FillExisting != 1 || s.Filled != 3 {
		t.Errorf("refill of a stored block: %+v; want it counted as existing", s)
	}
	// What was stored reads back.
	id := blockID("k", 1)
	buf := make([]byte, id.Len())
	if _, ok := tr.Get(context.Background(), id, [][]byte{buf}); !ok {
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
		if _, ok := tr.Get(context.Background(), id, [][]byte{buf}); ok {
			t.Fatal("hit from a failing store")
		}
	}
	s := tr.Stats()
	if s.Errors != 3 || s.Misses != 5 || !s.Degraded {
		t.Fatalf("stats %+v; want 3 errors (then skipped), 5 misses, degraded", s)
	}
	if tr.StartFill(id) != nil {
		t.Error("a fill was accepted while the tier is skipped")
	}
	now = now.Add(6 * time.Second) // the pause is over: one more try
	tr.Get(context.Background(), id, [][]byte{buf})
	if s := tr.Stats(); s.Errors != 4 {
		t.Errorf("after the pause: %+v; want one more request", s)
	}
}

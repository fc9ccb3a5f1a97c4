package cache

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/basin-csi/basin/pkg/objstore"
	"github.com/basin-csi/basin/pkg/objstore/objstoretest"
)

// heldStore answers List and Stat, then holds the answer until release
// is closed: the bucket answered before what happens meanwhile.
type heldStore struct {
	objstore.Store
	answered chan struct{}
	release  chan struct{}
}

func (h *heldStore) hold() {
	h.answered <- struct{}{}
	<-h.release
}

func (h *heldStore) List(ctx context.Context, opts objstore.ListOptions) (objstore.ListPage, error) {
	p, err := h.Store.List(ctx, opts)
	h.hold()
	return p, err
}

func (h *heldStore) Stat(ctx context.Context, key string) (objstore.ObjectInfo, error) {
	info, err := h.Store.Stat(ctx, key)
	h.hold()
	return info, err
}

// TestFetchAcrossOwnChangeNotCached: a listing or a HEAD the bucket
// answered before this mount deleted a key, and that arrives after the
// delete's invalidation, is returned but not cached, so the deleted
// object does not come back for the metadata TTL. (Before, the listing's
// entry and the HEAD's attributes were recorded after the invalidation.)
func TestFetchAcrossOwnChangeNotCached(t *testing.T) {
	for _, fetch := range []string{"prime", "list", "stat"} {
		t.Run(fetch, func(t *testing.T) {
			fake := objstoretest.NewFake()
			put(t, fake, "d/x", []byte("x"))
			put(t, fake, "d/y", []byte("y"))
			held := &heldStore{Store: fake, answered: make(chan struct{}), release: make(chan struct{})}
			opts := testOpts()
			opts.MetadataTTL, opts.NegativeMetadataTTL = time.Hour, time.Hour
			c := openTest(t, t.TempDir(), held, opts)
			defer func() { _ = c.Close() }()
			done := make(chan error, 1)
			go func() {
				var err error
				switch fetch {
				case "prime":
					err = c.Prime(context.Background(), "d/")
				case "list":
					_, err = c.List(context.Background(), "d/")
				case "stat":
					_, err = c.Stat(context.Background(), "d/x")
				}
				done <- err
			}()
			<-held.answered // the bucket answered with d/x in it
			if err := fake.Delete(context.Background(), "d/x"); err != nil {
				t.Fatal(err)
			}
			c.Invalidate("d/x") // as the mount does after its delete
			close(held.release)
			if err := <-done; err != nil {
				t.Fatal(err)
			}
			if l, ok, err := c.cachedListing("d/"); err != nil || (ok && slices.ContainsFunc(l.Objects, func(o objstore.ObjectInfo) bool { return o.Key == "d/x" })) {
				t.Errorf("the cached listing of d/ shows the deleted d/x (%v)", err)
			}
			go func() { // a Stat now reaches the bucket (held once more)
				<-held.answered
			}()
			_, err := c.Stat(context.Background(), "d/x")
			if !errors.Is(err, objstore.ErrNotFound) {
				t.Errorf("Stat of the deleted d/x after the stale %s: %v, want not found", fetch, err)
			}
		})
	}
}

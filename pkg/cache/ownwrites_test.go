package cache

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/basin-csi/basin/pkg/objstore"
	"github.com/basin-csi/basin/pkg/objstore/objstoretest"
)

// TestWroteKeepsTheListing: an upload of this mount puts the object into
// the directory's cached listing instead of dropping it, and the index
// holds the new listing when Wrote returns (a crash cannot bring back the
// one without it).
func TestWroteKeepsTheListing(t *testing.T) {
	opts := testOpts()
	c, fake, _ := newFixture(t, opts)
	ctx := context.Background()
	put(t, fake, "d/a", []byte("a"))
	if _, err := c.List(ctx, "d/"); err != nil {
		t.Fatal(err)
	}
	c.Wrote(put(t, fake, "d/b", []byte("b")))
	lists := fake.Calls(objstoretest.OpList)
	l, err := c.List(ctx, "d/")
	if err != nil || len(l.Objects) != 2 || l.Objects[1].Key != "d/b" {
		t.Fatalf("listing after Wrote: %+v %v, want d/a and d/b", l.Objects, err)
	}
	if _, err := c.Stat(ctx, "d/b"); err != nil {
		t.Fatal(err)
	}
	if n := fake.Calls(objstoretest.OpList) - lists; n != 0 {
		t.Errorf("%d listings after Wrote, want 0", n)
	}
	var stored Listing
	if err := c.ix.view(func(tx *bolt.Tx) error {
		raw := tx.Bucket(bucketListings).Get(pathKey("d/"))
		if raw == nil {
			return errors.New("no listing of d/ in the index")
		}
		var err error
		stored, err = decodeListing("d/", raw)
		return err
	}); err != nil {
		t.Fatal(err)
	}
	if len(stored.Objects) != 2 {
		t.Errorf("the index holds %+v, want d/a and d/b", stored.Objects)
	}
}

// TestMadeDirAnswersAbsentNamesForTheMetadataTTL: in a directory this
// mount created, a name nobody wrote is absent without a request past
// the negative TTL, until the metadata TTL; the parent lists the new
// directory and KnownDir knows it.
func TestMadeDirAnswersAbsentNamesForTheMetadataTTL(t *testing.T) {
	var now atomic.Int64
	now.Store(time.Now().UnixNano())
	opts := testOpts()
	opts.MetadataTTL, opts.NegativeTTL = time.Minute, time.Second
	opts.Now = func() time.Time { return time.Unix(0, now.Load()) }
	c, fake, _ := newFixture(t, opts)
	ctx := context.Background()
	if _, err := c.List(ctx, ""); err != nil {
		t.Fatal(err)
	}
	put(t, fake, "new/", nil)
	c.MadeDir("new")
	if isDir, known := c.KnownDir("new"); !isDir || !known {
		t.Errorf("KnownDir(new) = %v, %v; want a directory, known", isDir, known)
	}
	if l, err := c.List(ctx, ""); err != nil || len(l.Prefixes) != 1 || l.Prefixes[0] != "new/" {
		t.Errorf("root listing %+v %v, want new/", l.Prefixes, err)
	}
	heads := fake.Calls(objstoretest.OpStat)
	now.Add(int64(30 * time.Second)) // past the negative TTL, within the metadata TTL
	if _, err := c.Stat(ctx, "new/x"); !errors.Is(err, objstore.ErrNotFound) {
		t.Errorf("Stat(new/x) = %v, want not found", err)
	}
	if n := fake.Calls(objstoretest.OpStat) - heads; n != 0 {
		t.Errorf("%d HEADs in a directory the mount made, want 0", n)
	}
	now.Add(int64(time.Minute)) // past the metadata TTL: ask
	_, _ = c.Stat(ctx, "new/x")
	if n := fake.Calls(objstoretest.OpStat) - heads; n != 1 {
		t.Errorf("%d HEADs past the metadata TTL, want 1", n)
	}
}

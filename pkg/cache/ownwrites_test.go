package cache

import (
	"bytes"
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
	opts.MetadataTTL, opts.NegativeMetadataTTL = time.Minute, time.Second
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

// TestRemovedIsGoneAtOnce: a directory this mount made and removed, a
// listed directory it removed and a file it deleted are gone from Stat,
// KnownDir and the parent's listing at once, without a request, while the
// metadata TTL would still have answered the old state.
func TestRemovedIsGoneAtOnce(t *testing.T) {
	for _, negTTL := range []time.Duration{time.Minute, 0} {
		t.Run(negTTL.String(), func(t *testing.T) {
			opts := testOpts()
			opts.MetadataTTL, opts.NegativeMetadataTTL = time.Hour, negTTL
			c, fake, _ := newFixture(t, opts)
			ctx := context.Background()
			put(t, fake, "tree/x/f", []byte("f"))
			put(t, fake, "file", []byte("f"))
			if _, err := c.List(ctx, ""); err != nil {
				t.Fatal(err)
			}
			if _, err := c.List(ctx, "tree/"); err != nil {
				t.Fatal(err)
			}
			put(t, fake, "own/", nil)
			c.MadeDir("own")
			for _, k := range []string{"tree/x/f", "file", "own/"} {
				if err := fake.Delete(ctx, k); err != nil {
					t.Fatal(err)
				}
			}
			c.Removed("tree/x/f", false)
			c.Removed("tree/x", true)
			c.Removed("file", false)
			c.Removed("own", true)
			fake.ResetCounters()
			for _, dir := range []string{"own", "tree/x"} {
				if isDir, known := c.KnownDir(dir); isDir || !known {
					t.Errorf("KnownDir(%s) = %v, %v; want gone, known", dir, isDir, known)
				}
			}
			if negTTL != 0 {
				for _, k := range []string{"own", "file", "tree/x"} {
					if _, err := c.Stat(ctx, k); !errors.Is(err, objstore.ErrNotFound) {
						t.Errorf("Stat(%s) = %v, want not found", k, err)
					}
				}
			}
			if l, err := c.List(ctx, ""); err != nil || len(l.Objects) != 0 || len(l.Prefixes) != 1 || l.Prefixes[0] != "tree/" {
				t.Errorf("root listing %+v %+v %v; want tree/ only", l.Objects, l.Prefixes, err)
			}
			if l, err := c.List(ctx, "tree/"); err != nil || len(l.Prefixes) != 0 {
				t.Errorf("tree/ listing %+v %v; want empty", l.Prefixes, err)
			}
			if n := fake.Calls(objstoretest.OpList) + fake.Calls(objstoretest.OpStat); n != 0 {
				t.Errorf("%d bucket requests after the removals, want 0", n)
			}
		})
	}
}

// TestObjectMetadataByVersion: metadata a HEAD or an upload brought is
// answered again without a request for that version, also after a
// reopen; an unknown version is nil without probe and one HEAD with it.
func TestObjectMetadataByVersion(t *testing.T) {
	opts := testOpts()
	opts.MetadataTTL = time.Hour
	c, fake, dir := newFixture(t, opts)
	ctx := context.Background()
	meta := map[string]string{"mode": "33261"}
	info, err := fake.Put(ctx, "x", bytes.NewReader([]byte("#!/bin/sh\n")), objstore.PutOptions{Size: 10, Metadata: meta})
	if err != nil {
		t.Fatal(err)
	}
	listed := info
	listed.Metadata = nil // what an S3 listing says
	if m, known, err := c.ObjectMetadata(ctx, listed, false); err != nil || known || m != nil {
		t.Fatalf("unknown version without probe: %v %v %v", m, known, err)
	}
	fake.ResetCounters()
	if m, known, err := c.ObjectMetadata(ctx, listed, true); err != nil || !known || m["mode"] != "33261" {
		t.Fatalf("probe: %v %v %v", m, known, err)
	}
	if n := fake.Calls(objstoretest.OpStat); n != 1 {
		t.Errorf("%d HEADs for the probe, want 1", n)
	}
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	c2 := openTest(t, dir, fake, opts)
	defer func() { _ = c2.Close() }()
	fake.ResetCounters()
	if m, known, err := c2.ObjectMetadata(ctx, listed, true); err != nil || !known || m["mode"] != "33261" {
		t.Errorf("after a reopen: %v %v %v", m, known, err)
	}
	if n := fake.Calls(objstoretest.OpStat); n != 0 {
		t.Errorf("%d HEADs after a reopen, want 0", n)
	}
}

package fuse

import (
	"bytes"
	"context"
	"io"
	"os"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/basin-csi/basin/internal/testserver"
	"github.com/basin-csi/basin/pkg/cache/tier"
	"github.com/basin-csi/basin/pkg/mountspec"
	"github.com/basin-csi/basin/pkg/objstore"
	"github.com/basin-csi/basin/pkg/objstore/s3store"
)

// countingStore counts the data reads that reach the origin.
type countingStore struct {
	objstore.Store
	reads atomic.Int64
}

func (s *countingStore) Read(ctx context.Context, key string, o objstore.ReadOptions) (io.ReadCloser, objstore.ObjectInfo, error) {
	s.reads.Add(1)
	return s.Store.Read(ctx, key, o)
}

// TestSharedTierAcrossMounts: three mounts of one origin bucket share a
// tier (a MinIO of its own). The second reads a file the first read with
// no origin GET; a mount whose credentials the origin refuses gets EACCES
// and never the tier's copy.
func TestSharedTierAcrossMounts(t *testing.T) {
	srv := testserver.MinIO(t)
	bucket := newMinIOBucket(t, srv)
	origin := func(creds objstore.Credentials) objstore.Store {
		s, err := s3store.New(t.Context(), minioConfig(srv, bucket), creds)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = s.Close() })
		return s
	}
	good := origin(minioCreds(srv))
	data := randomBytes(9<<20+5, 7) // a large object: 10 blocks of 1 MiB
	put(t, good, "d/model.bin", data)

	tsrv := testserver.NewMinIO(t)
	tcfg := minioConfig(tsrv, "tier")
	tcfg.MaxAttempts = 10 // a server just started answers 503 until it is initialised
	tadmin, err := s3store.NewAdmin(t.Context(), tcfg, minioCreds(tsrv))
	if err != nil {
		t.Fatal(err)
	}
	if err := tadmin.CreateBucket(t.Context(), "tier"); err != nil {
		t.Fatal(err)
	}
	_ = tadmin.Close()
	tcfg.MaxAttempts = 1
	tstore, err := s3store.New(t.Context(), tcfg, minioCreds(tsrv))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = tstore.Close() })
	newTier := func() *tier.Tier {
		tr := tier.New(tstore, tier.Options{VolumeID: t.Name()})
		t.Cleanup(tr.Close)
		return tr
	}
	spec := mountSpec{cfg: Config{Spec: mountspec.Spec{MetadataTTL: time.Minute, NegativeMetadataTTL: time.Minute}}, cache: realCache, noPrefetch: true}

	spec.tier = newTier()
	a := mountStore(t, good, spec)
	var got []byte
	got, err = within(t, "read on mount A", func() ([]byte, error) { return os.ReadFile(path(a, "d/model.bin")) })
	if err != nil || !bytes.Equal(got, data) {
		t.Fatalf("mount A: %d bytes, %v", len(got), err)
	}
	// close(2) returns before the kernel's release reaches the mount, so
	// the last block's offer may still be coming: wait for the runs to be
	// stored, then that nothing more is queued.
	uploading := func() bool { s := spec.tier.Stats(); return s.QueueDepth > 0 || s.Filled+s.FillDropped < 10 }
	for deadline := time.Now().Add(time.Minute); uploading(); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("tier uploads of mount A not done: %+v", spec.tier.Stats())
		}
	}
	if s := spec.tier.Stats(); s.Filled != 10 {
		t.Fatalf("mount A stored %d tier objects, want 10: %+v", s.Filled, s)
	}

	readsB := &countingStore{Store: good}
	spec.tier = newTier()
	b := mountStore(t, readsB, spec)
	got, err = within(t, "read on mount B", func() ([]byte, error) { return os.ReadFile(path(b, "d/model.bin")) })
	if err != nil || !bytes.Equal(got, data) {
		t.Fatalf("mount B: %d bytes, %v", len(got), err)
	}
	if n := readsB.reads.Load(); n != 0 || spec.tier.Stats().Hits != 10 {
		t.Errorf("mount B: %d origin GETs, tier %+v; want 0 GETs and 10 tier hits", n, spec.tier.Stats())
	}

	bad := minioCreds(srv)
	bad.SecretAccessKey = "not-" + bad.SecretAccessKey
	spec.tier = newTier()
	c := mountStore(t, origin(bad), spec)
	_, err = within(t, "read on mount C", func() ([]byte, error) { return os.ReadFile(path(c, "d/model.bin")) })
	if errnoOf(err) != syscall.EACCES {
		t.Errorf("mount C with refused credentials: %v; want EACCES", err)
	}
	if s := spec.tier.Stats(); s.Hits != 0 || s.Misses != 0 {
		t.Errorf("mount C asked the tier: %+v", s)
	}
}

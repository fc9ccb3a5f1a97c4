package cache

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"io"
	"sync/atomic"
	"testing"
	"time"

	"github.com/basin-csi/basin/internal/testserver"
	"github.com/basin-csi/basin/pkg/cache/tier"
	"github.com/basin-csi/basin/pkg/objstore"
	"github.com/basin-csi/basin/pkg/objstore/s3store"
)

// The shared cache tier against real servers: the origin on the shared
// MinIO, the tier on a MinIO of its own (so that a test may stop it).

// s3On opens bucket on srv (creating it when create) with creds.
func s3On(t testing.TB, srv *testserver.Server, bucket string, creds objstore.Credentials, create bool, maxAttempts int) objstore.Store {
	t.Helper()
	cfg := objstore.Config{Backend: objstore.BackendS3, Endpoint: srv.Endpoint, Region: srv.Region, Bucket: bucket,
		PathStyle: true, RequestTimeout: 5 * time.Second, MaxAttempts: maxAttempts, PartSize: 16 << 20}
	if create {
		acfg := cfg
		acfg.MaxAttempts = 10 // a server just started answers 503 until it is initialised
		admin, err := s3store.NewAdmin(context.Background(), acfg, creds)
		if err != nil {
			t.Fatal(err)
		}
		if err := admin.CreateBucket(context.Background(), bucket); err != nil {
			t.Fatal(err)
		}
		_ = admin.Close()
	}
	s, err := s3store.New(context.Background(), cfg, creds)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

// countingStore counts the data reads (GETs) that reach a store.
type countingStore struct {
	objstore.Store
	reads, bytes atomic.Int64
}

func (s *countingStore) Read(ctx context.Context, key string, o objstore.ReadOptions) (io.ReadCloser, objstore.ObjectInfo, error) {
	s.reads.Add(1)
	rc, info, err := s.Store.Read(ctx, key, o)
	if err == nil && o.Length > 0 {
		s.bytes.Add(o.Length)
	}
	return rc, info, err
}

// tierRig is one origin bucket and one tier bucket on two servers.
type tierRig struct {
	originSrv    *testserver.Server
	originBucket string
	origin       objstore.Store
	tierSrv      *testserver.Server
	tierStore    objstore.Store
}

func newTierRig(t *testing.T) *tierRig {
	r := &tierRig{originSrv: testserver.MinIO(t), tierSrv: testserver.NewMinIO(t)}
	var b [6]byte
	_, _ = rand.Read(b[:])
	r.originBucket = "basin-origin-" + hex.EncodeToString(b[:])
	r.origin = s3On(t, r.originSrv, r.originBucket, rootCreds(r.originSrv), true, 2)
	r.tierStore = s3On(t, r.tierSrv, "tier", rootCreds(r.tierSrv), true, 1)
	return r
}

func rootCreds(srv *testserver.Server) objstore.Credentials {
	return objstore.Credentials{AccessKeyID: srv.AccessKey, SecretAccessKey: srv.SecretKey}
}

// node opens a cache of its own (a node) over origin with its own tier
// client; both close at the end of the test.
func (r *tierRig) node(t *testing.T, origin objstore.Store) (*Cache, *tier.Tier, *countingStore) {
	t.Helper()
	cs := &countingStore{Store: origin}
	tr := tier.New(r.tierStore, tier.Options{VolumeID: t.Name(), OpTimeout: 2 * time.Second, Pause: time.Hour})
	opts := testOpts()
	opts.Origin = "s3://origin/ @test"
	opts.Prefetch = false
	opts.Tier = tr
	c := openTest(t, t.TempDir(), cs, opts)
	t.Cleanup(func() {
		_ = c.Close()
		tr.Close()
	})
	return c, tr, cs
}

// drained waits until tr uploaded what it queued (bounded by the
// uploads' own timeouts).
func drained(t *testing.T, tr *tier.Tier) tier.Stats {
	t.Helper()
	for deadline := time.Now().Add(time.Minute); ; {
		s := tr.Stats()
		if s.QueueDepth == 0 {
			return s
		}
		if time.Now().After(deadline) {
			t.Fatalf("tier queue not drained: %+v", s)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// statAll stats keys through c.
func statAll(t *testing.T, c *Cache, keys ...string) []objstore.ObjectInfo {
	t.Helper()
	var out []objstore.ObjectInfo
	for _, k := range keys {
		info, err := c.Stat(context.Background(), k)
		if err != nil {
			t.Fatalf("Stat(%s): %v", k, err)
		}
		out = append(out, info)
	}
	return out
}

func TestTierSecondNodeReadsNoOriginData(t *testing.T) {
	r := newTierRig(t)
	data := map[string][]byte{
		"small":     randBytes(1, 100*kib),        // small: one tier object
		"tiny":      randBytes(2, 10),             // small: one tier object
		"large":     randBytes(3, 1*mib+17),       // 17 blocks of 64 KiB: 17 tier objects
		"d/aligned": randBytes(4, 4*64*kib),       // 4 blocks
		"d/three":   randBytes(5, 128*kib+64*kib), // above SmallObjectSize: 3 blocks
	}
	for k, v := range data {
		put(t, r.origin, k, v)
	}
	keys := []string{"small", "tiny", "large", "d/aligned", "d/three"}
	a, ta, oa := r.node(t, r.origin)
	for _, info := range statAll(t, a, keys...) {
		if got := readObject(t, a, info); !bytes.Equal(got, data[info.Key]) {
			t.Fatalf("node A: wrong bytes of %s", info.Key)
		}
	}
	sa := drained(t, ta)
	if sa.Hits != 0 || sa.Filled != 2+17+4+3 || sa.FillDropped != 0 || oa.reads.Load() == 0 {
		t.Fatalf("node A (cold tier): %+v, %d origin GETs; want 26 runs filled", sa, oa.reads.Load())
	}

	b, tb, ob := r.node(t, r.origin)
	for _, info := range statAll(t, b, keys...) {
		if got := readObject(t, b, info); !bytes.Equal(got, data[info.Key]) {
			t.Fatalf("node B: wrong bytes of %s", info.Key)
		}
	}
	sb := drained(t, tb)
	if n := ob.reads.Load(); n != 0 {
		t.Errorf("node B made %d origin GETs for data; want 0 (all from the tier)", n)
	}
	if sb.Hits != 26 || sb.Misses != 0 || sb.Filled != 0 || sb.Corrupt != 0 || sb.Degraded {
		t.Errorf("node B tier stats %+v; want 26 hits and nothing else", sb)
	}
	if bs := b.Stats(); !bs.Tiered || bs.Tier.HitBytes != int64(len(data["small"])+len(data["tiny"])+len(data["large"])+len(data["d/aligned"])+len(data["d/three"])) {
		t.Errorf("cache stats of node B: %+v", bs.Tier)
	}
	// Warm: from B's own data files, the tier is not asked again.
	before := tb.Stats().Hits
	for _, info := range statAll(t, b, keys...) {
		readObject(t, b, info)
	}
	if after := tb.Stats().Hits; after != before {
		t.Errorf("a warm read asked the tier %d times", after-before)
	}
}

func TestTierNeverServesAnotherVersion(t *testing.T) {
	r := newTierRig(t)
	v1, v2 := randBytes(10, 300*kib), randBytes(11, 300*kib) // same size, other bytes
	for _, k := range []string{"ckpt", "small"} {
		n := 300 * kib
		if k == "small" {
			n = 20 * kib
		}
		put(t, r.origin, k, v1[:n])
	}
	a, ta, _ := r.node(t, r.origin)
	for _, info := range statAll(t, a, "ckpt", "small") {
		readObject(t, a, info)
	}
	drained(t, ta)
	old := statAll(t, a, "ckpt", "small")

	// The objects change in the origin: new ETags.
	put(t, r.origin, "ckpt", v2)
	put(t, r.origin, "small", v2[:20*kib])
	b, tb, ob := r.node(t, r.origin)
	infos := statAll(t, b, "ckpt", "small")
	if infos[0].Version == old[0].Version {
		t.Fatal("the overwrite kept the ETag")
	}
	// Plant the old version's tier objects under the new version's keys,
	// as a wrong copy would: the identity check must refuse them.
	for i, info := range infos {
		// ckpt's block 0; small (one block) whole.
		oldID := tier.Identity{Origin: "s3://origin/ @test", Key: info.Key, Version: old[i].Version, Size: info.Size, BlockSize: 64 * kib, First: 0, Blocks: 1}
		newID := oldID
		newID.Version = info.Version
		if _, err := r.tierStore.Copy(context.Background(), oldID.ObjectKey(), newID.ObjectKey()); err != nil {
			t.Fatalf("plant %s: %v", info.Key, err)
		}
	}
	for i, info := range infos {
		want := v2[:info.Size]
		if got := readObject(t, b, info); !bytes.Equal(got, want) {
			t.Fatalf("%s: read bytes of the old version (%d)", info.Key, i)
		}
	}
	sb := drained(t, tb)
	if sb.Hits != 0 || sb.Corrupt != 2 || ob.reads.Load() == 0 {
		t.Errorf("tier stats %+v, %d origin GETs; want no hit, the 2 planted objects counted corrupt, the origin read", sb, ob.reads.Load())
	}
}

func TestTierCorruptObjectIsACountedMiss(t *testing.T) {
	r := newTierRig(t)
	data := randBytes(20, 256*kib) // 4 blocks
	put(t, r.origin, "f", data)
	a, ta, _ := r.node(t, r.origin)
	readObject(t, a, statAll(t, a, "f")[0])
	drained(t, ta)

	info := statAll(t, a, "f")[0]
	id := tier.Identity{Origin: "s3://origin/ @test", Key: "f", Version: info.Version, Size: info.Size, BlockSize: 64 * kib, First: 2, Blocks: 1}
	rc, _, err := r.tierStore.Read(context.Background(), id.ObjectKey(), objstore.ReadOptions{Length: -1})
	if err != nil {
		t.Fatalf("tier object of block 2: %v", err)
	}
	body, _ := io.ReadAll(rc)
	_ = rc.Close()
	body[len(body)-100] ^= 0x40 // one bit of the block's bytes
	put(t, r.tierStore, id.ObjectKey(), body)

	b, tb, ob := r.node(t, r.origin)
	if got := readObject(t, b, statAll(t, b, "f")[0]); !bytes.Equal(got, data) {
		t.Fatal("wrong bytes after a corrupt tier object")
	}
	sb := tb.Stats()
	if sb.Corrupt != 1 || sb.Hits != 3 || ob.reads.Load() != 1 || sb.Degraded {
		t.Errorf("tier stats %+v, %d origin GETs; want 1 corrupt, 3 hits, 1 origin GET, not degraded", sb, ob.reads.Load())
	}
}

func TestTierAccessDeniedNeverReadsTier(t *testing.T) {
	r := newTierRig(t)
	data := randBytes(30, 100*kib)
	put(t, r.origin, "secret", data)
	a, ta, _ := r.node(t, r.origin)
	readObject(t, a, statAll(t, a, "secret")[0])
	if drained(t, ta).Filled != 1 {
		t.Fatal("node A did not fill the tier")
	}
	// A volume whose credentials the origin refuses.
	denied := s3On(t, r.originSrv, r.originBucket, objstore.Credentials{AccessKeyID: r.originSrv.AccessKey, SecretAccessKey: "not-" + r.originSrv.SecretKey}, false, 1)
	c, tc, _ := r.node(t, denied)
	_, err := c.Stat(context.Background(), "secret")
	if !errors.Is(err, objstore.ErrAccessDenied) {
		t.Fatalf("Stat with refused credentials: %v; want ErrAccessDenied (EACCES)", err)
	}
	if s := tc.Stats(); s.Hits != 0 || s.Misses != 0 || s.HitBytes != 0 {
		t.Errorf("the refused volume got tier blocks: %+v", s)
	}
}

func TestTierStoppedMidReadFallsBackToOrigin(t *testing.T) {
	r := newTierRig(t)
	data := randBytes(40, 2*mib) // 32 blocks
	put(t, r.origin, "big", data)
	a, ta, _ := r.node(t, r.origin)
	readObject(t, a, statAll(t, a, "big")[0])
	drained(t, ta)

	b, tb, ob := r.node(t, r.origin)
	h := openObj(t, b, statAll(t, b, "big")[0])
	defer func() { _ = h.Close() }()
	got := make([]byte, len(data))
	half := len(data) / 2
	if _, err := h.ReadAt(context.Background(), got[:half], 0); err != nil {
		t.Fatal(err)
	}
	if n := ob.reads.Load(); n != 0 {
		t.Fatalf("the first half made %d origin GETs; want 0", n)
	}
	r.tierSrv.Stop()
	for off := half; off < len(data); {
		n, err := h.ReadAt(context.Background(), got[off:], int64(off))
		if err != nil && err != io.EOF {
			t.Fatalf("read at %d with the tier stopped: %v", off, err)
		}
		off += n
	}
	if !bytes.Equal(got, data) {
		t.Fatal("wrong bytes")
	}
	s := tb.Stats()
	if s.Errors == 0 || !s.Degraded || ob.reads.Load() == 0 {
		t.Errorf("tier stats %+v, %d origin GETs; want errors counted, degraded, the origin read", s, ob.reads.Load())
	}
}

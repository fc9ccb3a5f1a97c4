package tiersweep

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/basin-csi/basin/internal/promtest"
	"github.com/basin-csi/basin/internal/testserver"
	"github.com/basin-csi/basin/pkg/cache/tier"
	"github.com/basin-csi/basin/pkg/mountspec"
	"github.com/basin-csi/basin/pkg/objstore"
	"github.com/basin-csi/basin/pkg/objstore/s3store"
)

// bucketOn creates a fresh bucket on srv and returns it, opened with the
// root credentials.
func bucketOn(t *testing.T, srv *testserver.Server) (objstore.Store, string) {
	t.Helper()
	var b [6]byte
	_, _ = rand.Read(b[:])
	name := "tiersweep-" + hex.EncodeToString(b[:])
	cfg := objstore.Config{Backend: objstore.BackendS3, Endpoint: srv.Endpoint, Region: srv.Region, Bucket: name,
		PathStyle: true, RequestTimeout: 10 * time.Second, MaxAttempts: 5}
	admin, err := s3store.NewAdmin(t.Context(), cfg, rootCreds(srv))
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = admin.Close() }()
	if err := admin.CreateBucket(t.Context(), name); err != nil {
		t.Fatal(err)
	}
	s, err := s3store.New(t.Context(), cfg, rootCreds(srv))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s, name
}

func rootCreds(srv *testserver.Server) objstore.Credentials {
	return objstore.Credentials{AccessKeyID: srv.AccessKey, SecretAccessKey: srv.SecretKey}
}

// tierKey is the key of a made-up tier object.
func tierKey(i int) string {
	return tier.Identity{Origin: "s3://origin/", Key: fmt.Sprint("train/", i), Version: "e1", Size: 1, BlockSize: 1, Blocks: 1}.ObjectKey()
}

// volume is a volume naming the tier at url with limits.
func volume(name, url string, creds objstore.Credentials, srv *testserver.Server, l tier.Limits) Volume {
	spec := mountspec.Default()
	spec.SharedCache, spec.Region = url, srv.Region
	return Volume{Name: name, Spec: spec, Credentials: creds, Limits: l}
}

// TestPassKeepsTierWithinBounds: one pass over a tier on MinIO whose
// objects were stored one after another deletes exactly those older than
// the maximum age and then the oldest beyond the byte budget, the tightest
// bounds of the volumes naming the tier, with the credentials of the
// first volume by name; it leaves the younger objects, keys that are not
// tier objects, the bucket's other data and a tier no volume bounds. The
// metrics say what it did. A second pass deletes nothing more.
func TestPassKeepsTierWithinBounds(t *testing.T) {
	srv := testserver.MinIO(t)
	s, bucket := bucketOn(t, srv)
	const size = 1000
	put := func(key string) objstore.ObjectInfo {
		t.Helper()
		info, err := s.Put(t.Context(), key, bytes.NewReader(make([]byte, size)), objstore.PutOptions{Size: size})
		if err != nil {
			t.Fatal(err)
		}
		return info
	}
	// Oldest of all, and never deleted: data beside the tier, a key under
	// basin/ that is not a tier object, another team's tier.
	keep := []string{"data/train/0", "team-a/basin/README", "team-b/" + tierKey(0)}
	for _, k := range keep {
		put(k)
	}
	const n = 6
	var keys []string
	for i := range n {
		keys = append(keys, "team-a/"+tierKey(i))
		// Last-modified times are whole seconds: one object a second.
		for sec := time.Now().Unix(); time.Now().Unix() == sec; {
			time.Sleep(20 * time.Millisecond)
		}
		put(keys[i])
	}
	// The times as the pass sees them: a listing's.
	listed := map[string]time.Time{}
	err := objstore.ListAll(t.Context(), s, objstore.ListOptions{Prefix: "team-a/"}, func(p objstore.ListPage) error {
		for _, o := range p.Objects {
			listed[o.Key] = o.ModTime
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	var mod []time.Time
	for _, k := range keys {
		if len(mod) > 0 && !listed[k].After(mod[len(mod)-1]) {
			t.Fatalf("MinIO listed %s with the last-modified time %v, not after the previous object's %v", k, listed[k], mod[len(mod)-1])
		}
		mod = append(mod, listed[k])
	}
	// Ages relative to now: objects 0 and 1 are older than the maximum
	// age; the budget holds two and a half objects, so 2 and 3 go too.
	now := mod[n-1].Add(time.Hour)
	maxAge := now.Sub(mod[1].Add(mod[2].Sub(mod[1]) / 2))
	url := srv.Endpoint + "/" + bucket + "/team-a"
	bogus := objstore.Credentials{AccessKeyID: "nobody", SecretAccessKey: "wrong-secret-key"}
	vols := []Volume{
		volume("pv-b", url, bogus, srv, tier.Limits{MaxBytes: 2*size + size/2}),
		volume("pv-a", url, rootCreds(srv), srv, tier.Limits{MaxBytes: 6 * size, MaxAge: maxAge}),
		volume("pv-c", srv.Endpoint+"/"+bucket+"/team-b", rootCreds(srv), srv, tier.Limits{}),
	}
	reg := prometheus.NewRegistry()
	m, err := NewMetrics(reg)
	if err != nil {
		t.Fatal(err)
	}
	sw := New(Config{Metrics: m, Now: func() time.Time { return now }})
	if err := sw.Pass(t.Context(), vols); err != nil {
		t.Fatal(err)
	}
	left := listAll(t, s)
	for i, k := range keys {
		if gone := !slices.Contains(left, k); gone != (i < 4) {
			t.Errorf("tier object %d: deleted %v, want %v", i, gone, i < 4)
		}
	}
	for _, k := range keep {
		if !slices.Contains(left, k) {
			t.Errorf("%s deleted; only team-a's tier objects may be", k)
		}
	}
	for _, c := range []struct {
		name   string
		labels map[string]string
		want   float64
	}{
		{"basin_controller_tier_bytes", nil, 2 * size},
		{"basin_controller_tier_objects", nil, 2},
		{"basin_controller_tier_evicted_objects_total", map[string]string{"reason": EvictedAge}, 2},
		{"basin_controller_tier_evicted_objects_total", map[string]string{"reason": EvictedBudget}, 2},
		{"basin_controller_tier_evicted_bytes_total", nil, 4 * size},
		{"basin_controller_tier_passes_total", map[string]string{"result": "ok"}, 1},
	} {
		labels := map[string]string{"tier": url}
		maps.Copy(labels, c.labels)
		if got, ok := promtest.Value(t, reg, c.name, labels); !ok || got != c.want {
			t.Errorf("%s%v = %v (present %v), want %v", c.name, c.labels, got, ok, c.want)
		}
	}
	if got, ok := promtest.Value(t, reg, "basin_controller_tier_objects", map[string]string{"tier": srv.Endpoint + "/" + bucket + "/team-b"}); ok {
		t.Errorf("the unbounded tier was swept: objects = %v", got)
	}
	if err := sw.Pass(t.Context(), vols); err != nil {
		t.Fatal(err)
	}
	if again := listAll(t, s); !slices.Equal(again, left) {
		t.Errorf("second pass changed the tier: %q, then %q", left, again)
	}
}

// TestPassFailureIsCountedNotFatal: a tier whose credentials are refused
// fails its pass with ErrAccessDenied, counted, and the other tiers are
// swept all the same.
func TestPassFailureIsCountedNotFatal(t *testing.T) {
	srv := testserver.MinIO(t)
	s, bucket := bucketOn(t, srv)
	for i := range 3 {
		if _, err := s.Put(t.Context(), "ok/"+tierKey(i), strings.NewReader("block"), objstore.PutOptions{Size: 5}); err != nil {
			t.Fatal(err)
		}
	}
	refused, ok := srv.Endpoint+"/"+bucket+"/refused", srv.Endpoint+"/"+bucket+"/ok"
	reg := prometheus.NewRegistry()
	m, err := NewMetrics(reg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	err = New(Config{Metrics: m}).Pass(ctx, []Volume{
		volume("pv-1", refused, objstore.Credentials{AccessKeyID: "nobody", SecretAccessKey: "wrong-secret-key"}, srv, tier.Limits{MaxBytes: 1}),
		volume("pv-2", ok, rootCreds(srv), srv, tier.Limits{MaxBytes: 5}),
	})
	if !errors.Is(err, objstore.ErrAccessDenied) {
		t.Errorf("Pass = %v; want ErrAccessDenied", err)
	}
	if got, _ := promtest.Value(t, reg, "basin_controller_tier_passes_total", map[string]string{"tier": refused, "result": "error"}); got != 1 {
		t.Errorf("failed passes of the refused tier = %v, want 1", got)
	}
	if got, _ := promtest.Value(t, reg, "basin_controller_tier_objects", map[string]string{"tier": ok}); got != 1 {
		t.Errorf("objects left in the other tier = %v, want 1", got)
	}
}

// listAll returns every key of s.
func listAll(t *testing.T, s objstore.Store) []string {
	t.Helper()
	var keys []string
	err := objstore.ListAll(t.Context(), s, objstore.ListOptions{}, func(p objstore.ListPage) error {
		for _, o := range p.Objects {
			keys = append(keys, o.Key)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return keys
}

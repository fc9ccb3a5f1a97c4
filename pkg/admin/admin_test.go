package admin

import (
	"bytes"
	"context"
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/basin-csi/basin/pkg/cache"
	"github.com/basin-csi/basin/pkg/mountspec"
	"github.com/basin-csi/basin/pkg/objstore"
	"github.com/basin-csi/basin/pkg/objstore/objstoretest"
)

const kib = 1 << 10

// liveFixture opens a cache over a fake holding objects o0..o3 of 40, 80,
// 120 and 160 KiB, reads them in that order, and serves it on an admin
// socket in the cache directory.
func liveFixture(t *testing.T, capacity int64) (*cache.Cache, *Client, string) {
	t.Helper()
	ctx := context.Background()
	fake := objstoretest.NewFake()
	dir := t.TempDir()
	c, err := cache.Open(ctx, dir, fake, cache.Options{Spec: mountspec.Spec{CacheBlockSize: 64 * kib, CacheSize: capacity}, VolumeID: "vol-1", Origin: "fake://b/", MinFreeRatio: -1})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	for i, name := range []string{"o0", "o1", "o2", "o3"} {
		data := bytes.Repeat([]byte{byte('a' + i)}, (i+1)*40*kib)
		info, err := fake.Put(ctx, name, bytes.NewReader(data), objstore.PutOptions{Size: int64(len(data))})
		if err != nil {
			t.Fatal(err)
		}
		h, err := c.OpenObject(ctx, info)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := io.ReadAll(io.NewSectionReader(readerAt{ctx, h}, 0, info.Size)); err != nil {
			t.Fatal(err)
		}
		_ = h.Close()
		time.Sleep(2 * time.Millisecond) // distinct access times
	}
	if err := c.Sync(); err != nil {
		t.Fatal(err)
	}
	reg := prometheus.NewRegistry()
	reg.MustRegister(prometheus.NewCounter(prometheus.CounterOpts{Name: "basin_test_total", Help: "A test counter."}))
	info := Info{VolumeID: "vol-1", CacheDir: dir, PID: os.Getpid(), Started: time.Now()}
	vol := ForCache(c, info, func() FSStats { return FSStats{PassthroughOpens: 7} })
	srv, err := Serve(SocketPath(dir), Handler(vol, info, reg))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = srv.Close() })
	return c, NewClient(SocketPath(dir)), dir
}

type readerAt struct {
	ctx context.Context
	h   *cache.Handle
}

func (r readerAt) ReadAt(p []byte, off int64) (int, error) { return r.h.ReadAt(r.ctx, p, off) }

func TestClientServer(t *testing.T) {
	ctx := context.Background()
	c, cl, dir := liveFixture(t, 10<<20)

	st, err := os.Stat(SocketPath(dir))
	if err != nil || st.Mode().Perm() != 0o600 || st.Mode().Type() != fs.ModeSocket {
		t.Fatalf("socket: %v, %v; want a 0600 socket", st.Mode(), err)
	}
	info, err := cl.Info(ctx)
	if err != nil || info.VolumeID != "vol-1" || info.PID != os.Getpid() {
		t.Errorf("info = %+v, %v", info, err)
	}
	s, err := cl.Stats(ctx)
	if err != nil {
		t.Fatal(err)
	}
	want := c.Stats()
	if !s.Live || s.UsedBytes != want.UsedBytes || s.Objects != 4 || s.Misses != want.Misses || s.CapacityBytes != 10<<20 || s.PassthroughOpens != 7 {
		t.Errorf("stats = %+v, cache says %+v", s, want)
	}

	tests := []struct {
		q    EntryQuery
		want []string
	}{
		{EntryQuery{}, []string{"o0", "o1", "o2", "o3"}},
		{EntryQuery{Order: Oldest, Limit: 1}, []string{"o0"}},
		{EntryQuery{Order: Largest, Limit: 2}, []string{"o3", "o2"}},
		{EntryQuery{Order: Largest, Prefix: "o1"}, []string{"o1"}},
	}
	for _, tt := range tests {
		es, err := cl.Entries(ctx, tt.q)
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, e := range es {
			got = append(got, e.Key)
			if e.PresentBlocks != e.Blocks || e.AllocBytes <= 0 || e.LastAccess.IsZero() {
				t.Errorf("%+v: want fully present with allocation and access time", e)
			}
		}
		if len(got) != len(tt.want) || (len(got) > 0 && got[0] != tt.want[0]) || got[len(got)-1] != tt.want[len(tt.want)-1] {
			t.Errorf("%+v: keys %q, want %q", tt.q, got, tt.want)
		}
	}
	if _, err := cl.Entries(ctx, EntryQuery{Order: "newest"}); !errors.Is(err, ErrInvalidArgument) {
		t.Errorf("bad order: %v, want ErrInvalidArgument", err)
	}

	mfs, err := cl.Metrics(ctx)
	if err != nil || len(mfs) != 1 || mfs[0].GetName() != "basin_test_total" {
		t.Errorf("metrics = %v, %v", mfs, err)
	}

	rep, err := cl.Verify(ctx)
	if err != nil || len(rep.Problems) != 0 || rep.Objects != 4 {
		t.Errorf("verify of a sound cache = %+v, %v", rep, err)
	}
	corrupt(t, dir)
	rep, err = cl.Verify(ctx)
	if err != nil || len(rep.Problems) != 1 {
		t.Errorf("verify of a corrupted cache = %+v, %v; want one problem", rep, err)
	}

	res, err := cl.GC(ctx, GCRequest{TargetBytes: 170 * kib})
	if err != nil || res.AfterBytes > 170*kib || res.Evicted != 3 || res.TargetBytes != 170*kib {
		t.Errorf("gc = %+v, %v; want the three oldest evicted", res, err)
	}
	if es, _ := cl.Entries(ctx, EntryQuery{}); len(es) != 1 || es[0].Key != "o3" {
		t.Errorf("left after gc: %+v", es)
	}
	if _, err := cl.GC(ctx, GCRequest{TargetBytes: -1, CapacityBytes: 1}); err != nil {
		t.Errorf("gc to a capacity: %v", err)
	}
}

func TestGCWithoutCapacity(t *testing.T) {
	_, cl, _ := liveFixture(t, 0)
	if _, err := cl.GC(context.Background(), GCRequest{TargetBytes: -1}); !errors.Is(err, ErrInvalidArgument) {
		t.Errorf("gc without capacity or target: %v, want ErrInvalidArgument", err)
	}
}

// corrupt flips bytes in every data file.
func corrupt(t *testing.T, dir string) {
	t.Helper()
	n := 0
	err := filepath.WalkDir(filepath.Join(dir, "data"), func(p string, d fs.DirEntry, err error) error {
		if err != nil || !d.Type().IsRegular() || n > 0 {
			return err
		}
		n++
		f, err := os.OpenFile(p, os.O_RDWR, 0)
		if err != nil {
			return err
		}
		defer func() { _ = f.Close() }()
		_, err = f.WriteAt([]byte("corrupted!"), 10)
		return err
	})
	if err != nil || n == 0 {
		t.Fatalf("corrupting %d data files: %v", n, err)
	}
}

func TestNotServing(t *testing.T) {
	dir := t.TempDir()
	cl := NewClient(SocketPath(dir))
	if _, err := cl.Stats(context.Background()); !errors.Is(err, ErrNotServing) {
		t.Errorf("no socket: %v, want ErrNotServing", err)
	}
	// A stale socket: bound, then its listener gone without unlinking.
	lis, err := Listen(SocketPath(dir))
	if err != nil {
		t.Fatal(err)
	}
	lis.(interface{ SetUnlinkOnClose(bool) }).SetUnlinkOnClose(false)
	_ = lis.Close()
	if _, err := cl.Stats(context.Background()); !errors.Is(err, ErrNotServing) {
		t.Errorf("stale socket: %v, want ErrNotServing", err)
	}
	// Listen replaces the stale socket, but never a regular file.
	lis, err = Listen(SocketPath(dir))
	if err != nil {
		t.Fatalf("listen over a stale socket: %v", err)
	}
	_ = lis.Close()
	file := filepath.Join(dir, "file")
	if err := os.WriteFile(file, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := Listen(file); err == nil {
		t.Error("listen replaced a regular file")
	}
	long := filepath.Join(dir, string(bytes.Repeat([]byte("x"), 120)))
	if _, err := Listen(long); !errors.Is(err, ErrInvalidArgument) {
		t.Errorf("listen on a %d-byte path: %v, want ErrInvalidArgument", len(long), err)
	}
}

func TestParseParams(t *testing.T) {
	tests := []struct {
		name string
		q    EntryQuery
	}{
		{"default", EntryQuery{Order: Oldest}},
		{"largest with limit and prefix", EntryQuery{Order: Largest, Limit: 5, Prefix: "a b/ü"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := parseEntryQuery(tt.q.values())
			if err != nil || got != tt.q {
				t.Errorf("round trip %+v -> %+v, %v", tt.q, got, err)
			}
		})
	}
	for _, r := range []GCRequest{{TargetBytes: -1}, {TargetBytes: 0}, {TargetBytes: 5 << 30}, {TargetBytes: -1, CapacityBytes: 1 << 30}} {
		if got, err := parseGCRequest(r.values()); err != nil || got != r {
			t.Errorf("round trip %+v -> %+v, %v", r, got, err)
		}
	}
	bad := GCRequest{TargetBytes: -1}.values()
	bad.Set("target", "-5")
	if _, err := parseGCRequest(bad); !errors.Is(err, ErrInvalidArgument) {
		t.Errorf("negative target: %v", err)
	}
	if _, err := parseEntryQuery(map[string][]string{"limit": {"x"}}); !errors.Is(err, ErrInvalidArgument) {
		t.Errorf("bad limit: %v", err)
	}
}

func TestHitRatio(t *testing.T) {
	if _, ok := (Stats{}).HitRatio(); ok {
		t.Error("hit ratio without reads")
	}
	if r, ok := (Stats{HitBytes: 3, MissBytes: 1}).HitRatio(); !ok || r != 0.75 {
		t.Errorf("hit ratio = %v, %v; want 0.75", r, ok)
	}
}

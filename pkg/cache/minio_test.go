package cache

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"sync"
	"testing"
	"time"

	"github.com/basin-csi/basin/internal/testserver"
	"github.com/basin-csi/basin/pkg/objstore"
	"github.com/basin-csi/basin/pkg/objstore/s3store"
)

// minioStore opens a new bucket on the shared MinIO server.
func minioStore(t testing.TB) objstore.Store {
	t.Helper()
	srv := testserver.MinIO(t)
	cfg := objstore.Config{Backend: objstore.BackendS3, Endpoint: srv.Endpoint, Region: srv.Region,
		PathStyle: true, RequestTimeout: 30 * time.Second, MaxAttempts: 2}
	creds := objstore.Credentials{AccessKeyID: srv.AccessKey, SecretAccessKey: srv.SecretKey}
	var b [6]byte
	_, _ = rand.Read(b[:])
	cfg.Bucket = "basin-cache-" + hex.EncodeToString(b[:])
	admin, err := s3store.NewAdmin(context.Background(), cfg, creds)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = admin.Close() }()
	if err := admin.CreateBucket(context.Background(), cfg.Bucket); err != nil {
		t.Fatal(err)
	}
	s, err := s3store.New(context.Background(), cfg, creds)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

func TestMinIOReadThrough(t *testing.T) {
	store := minioStore(t)
	opts := testOpts()
	opts.Origin = "s3://minio/"
	c := openTest(t, t.TempDir(), store, opts)
	defer func() { _ = c.Close() }()
	ctx := context.Background()
	small, large := randBytes(900, 100*kib), randBytes(901, 2*mib+17)
	put(t, store, "s", small)
	put(t, store, "dir/l", large)
	for _, tc := range []struct {
		key  string
		data []byte
	}{{"s", small}, {"dir/l", large}} {
		info, err := c.Stat(ctx, tc.key)
		if err != nil {
			t.Fatal(err)
		}
		if got := readObject(t, c, info); !bytes.Equal(got, tc.data) {
			t.Fatalf("%s: wrong bytes from MinIO", tc.key)
		}
		before := c.Stats().BucketBytes
		if got := readObject(t, c, info); !bytes.Equal(got, tc.data) {
			t.Fatalf("%s: wrong bytes from the cache", tc.key)
		}
		if after := c.Stats().BucketBytes; after != before {
			t.Errorf("%s: warm read fetched %d bytes", tc.key, after-before)
		}
	}
	l, err := c.List(ctx, "")
	if err != nil || len(l.Objects) != 1 || len(l.Prefixes) != 1 || l.Prefixes[0] != "dir/" {
		t.Fatalf("List = %+v, %v", l, err)
	}
	// A version change in the real store: IfVersion refuses the old one.
	old, err := c.Stat(ctx, "dir/l")
	if err != nil {
		t.Fatal(err)
	}
	put(t, store, "dir/l", randBytes(902, 2*mib+17))
	cold := old
	cold.Key = "dir/l"
	c2 := openTest(t, t.TempDir(), store, opts)
	defer func() { _ = c2.Close() }()
	h := openObj(t, c2, cold)
	defer func() { _ = h.Close() }()
	if _, err := h.ReadAt(ctx, make([]byte, 10), 0); !errors.Is(err, objstore.ErrPreconditionFailed) {
		t.Fatalf("read of a replaced version: %v, want ErrPreconditionFailed", err)
	}
}

// shapedStore makes a store behave like S3 from one client: a time to
// first byte per request and a bandwidth cap per connection (MinIO on
// loopback has neither; the kernel here has no netem).
type shapedStore struct {
	objstore.Store
	ttfb        time.Duration
	bytesPerSec float64
}

func (s shapedStore) Read(ctx context.Context, key string, opts objstore.ReadOptions) (io.ReadCloser, objstore.ObjectInfo, error) {
	time.Sleep(s.ttfb)
	rc, info, err := s.Store.Read(ctx, key, opts)
	if err != nil {
		return nil, info, err
	}
	return &shapedBody{ReadCloser: rc, rate: s.bytesPerSec, start: time.Now()}, info, nil
}

type shapedBody struct {
	io.ReadCloser
	rate  float64
	start time.Time
	n     int64
}

func (b *shapedBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	b.n += int64(n)
	if ahead := time.Duration(float64(b.n)/b.rate*float64(time.Second)) - time.Since(b.start); ahead > 0 {
		time.Sleep(ahead)
	}
	return n, err
}

// BenchmarkColdFetchMinIO reads a 64 MiB object from MinIO into an empty
// cache: with one GET for the whole object, and with parallel ranged GETs
// of 8 MiB (8 at a time, the FUSE layer's read-ahead asking for all of
// it); "store" is a bare GET into io.Discard, "store-parallel" the 8 MiB
// ranged GETs of the parallel parts, all at once, into io.Discard.
// "s3like" adds 20 ms to the first byte of every GET and caps each
// connection at 100 MB/s, roughly what one S3 connection gives.
func BenchmarkColdFetchMinIO(b *testing.B) {
	const size = 64 * mib
	minio := minioStore(b)
	info := put(b, minio, "cold", randBytes(77, size))
	ctx := context.Background()
	for _, net := range []struct {
		name  string
		store objstore.Store
	}{
		{"loopback", minio},
		{"s3like", shapedStore{Store: minio, ttfb: 20 * time.Millisecond, bytesPerSec: 100e6}},
	} {
		store := net.store
		b.Run(net.name+"/store", func(b *testing.B) {
			b.SetBytes(size)
			for b.Loop() {
				rc, _, err := store.Read(ctx, info.Key, objstore.ReadOptions{Length: -1})
				if err != nil {
					b.Fatal(err)
				}
				if n, err := io.Copy(io.Discard, rc); err != nil || n != size {
					b.Fatal(n, err)
				}
				_ = rc.Close()
			}
		})
		b.Run(net.name+"/store-parallel", func(b *testing.B) {
			// What the cache's parallel parts could reach: 8 MiB ranged
			// GETs, 8 at a time, into io.Discard.
			b.SetBytes(size)
			for b.Loop() {
				var (
					wg   sync.WaitGroup
					errs [size / DefaultPartSize]error
				)
				for i := range errs {
					wg.Go(func() {
						off := int64(i) * DefaultPartSize
						rc, _, err := store.Read(ctx, info.Key, objstore.ReadOptions{Offset: off, Length: DefaultPartSize})
						if err == nil {
							_, err = io.Copy(io.Discard, rc)
							_ = rc.Close()
						}
						errs[i] = err
					})
				}
				wg.Wait()
				if err := errors.Join(errs[:]...); err != nil {
					b.Fatal(err)
				}
			}
		})
		for _, bc := range []struct {
			name     string
			small    int64
			parallel int
		}{
			{"cache-single-GET", size, 1},
			{"cache-parallel-parts", DefaultSmallObjectSize, DefaultMaxParallelFetches},
		} {
			b.Run(net.name+"/"+bc.name, func(b *testing.B) {
				opts := Options{VolumeID: "bench", Origin: "s3://minio/", SmallObjectSize: bc.small, MinFreeRatio: -1}
				opts.MaxParallelFetches = bc.parallel
				buf := make([]byte, 1*mib)
				b.SetBytes(size)
				i := 0
				for b.Loop() {
					c := openTest(b, fmt.Sprintf("%s/%d", b.TempDir(), i), store, opts)
					h := openObj(b, c, info)
					h.Prefetch(0, size)
					for off := int64(0); off < size; off += int64(len(buf)) {
						if _, err := h.ReadAt(ctx, buf, off); err != nil {
							b.Fatal(err)
						}
					}
					_ = h.Close()
					b.StopTimer()
					_ = c.Close()
					b.StartTimer()
					i++
				}
			})
		}
	}
}

package cache

import (
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/basin-csi/basin/pkg/objstore"
	"github.com/basin-csi/basin/pkg/objstore/objstoretest"
)

func TestReadHitsAndMisses(t *testing.T) {
	c, fake, _ := newFixture(t, testOpts())
	tests := []struct {
		name      string
		size      int
		wantReads int64 // GETs for the first full read
	}{
		{"empty", 0, 0},
		{"one byte", 1, 1},
		{"small, several blocks, one GET", 100 * kib, 1},
		{"exactly small limit", 128 * kib, 1},
		{"large, one GET per part", 1*mib + 3, 9}, // 17 blocks of 64 KiB, parts of 2 blocks
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			data := randBytes(uint64(i), tt.size)
			info := put(t, fake, "obj/"+tt.name, data)
			fake.ResetCounters()
			h := openObj(t, c, info)
			defer func() { _ = h.Close() }()
			got := readAll(t, h, 256*kib) // 4 blocks per read: 2 parts
			if !bytes.Equal(got, data) {
				t.Fatalf("first read: got %d bytes, want %d (mismatch)", len(got), len(data))
			}
			if n := fake.Calls(objstoretest.OpRead); n != tt.wantReads {
				t.Errorf("first read: %d GETs, want %d", n, tt.wantReads)
			}
			before := c.Stats()
			if got := readAll(t, h, 64*kib); !bytes.Equal(got, data) {
				t.Fatal("second read differs")
			}
			if n := fake.Calls(objstoretest.OpRead); n != tt.wantReads {
				t.Errorf("second read went to the bucket: %d GETs", n)
			}
			after := c.Stats()
			if tt.size > 0 && (after.Hits <= before.Hits || after.HitBytes-before.HitBytes != int64(tt.size)) {
				t.Errorf("stats: hits %d→%d, hit bytes +%d, want +%d", before.Hits, after.Hits, after.HitBytes-before.HitBytes, tt.size)
			}
		})
	}
}

func TestReadAtEdges(t *testing.T) {
	c, fake, _ := newFixture(t, testOpts())
	data := randBytes(7, 300*kib+5)
	h := openObj(t, c, put(t, fake, "edges", data))
	defer func() { _ = h.Close() }()
	tests := []struct {
		name    string
		off     int64
		n       int
		wantN   int
		wantErr error
	}{
		{"start", 0, 10, 10, nil},
		{"across blocks", 64*kib - 3, 10, 10, nil},
		{"many blocks", 10, 200 * kib, 200 * kib, nil},
		{"to the end exactly", int64(len(data)) - 5, 5, 5, nil},
		{"past the end", int64(len(data)) - 5, 50, 5, io.EOF},
		{"at the end", int64(len(data)), 10, 0, io.EOF},
		{"beyond the end", int64(len(data)) + 10, 10, 0, io.EOF},
		{"empty buffer", 3, 0, 0, nil},
		{"negative offset", -1, 10, 0, ErrInvalidArgument},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := make([]byte, tt.n)
			n, err := h.ReadAt(context.Background(), p, tt.off)
			if n != tt.wantN || !errors.Is(err, tt.wantErr) && err != tt.wantErr {
				t.Fatalf("ReadAt(%d, %d) = %d, %v; want %d, %v", tt.off, tt.n, n, err, tt.wantN, tt.wantErr)
			}
			if n > 0 && !bytes.Equal(p[:n], data[tt.off:tt.off+int64(n)]) {
				t.Fatal("wrong bytes")
			}
		})
	}
}

func TestSingleFlight(t *testing.T) {
	c, fake, _ := newFixture(t, testOpts())
	data := randBytes(1, 1*mib)
	info := put(t, fake, "big", data)
	release := make(chan struct{})
	fake.SetHook(func(ctx context.Context, op objstoretest.Op, key string) error {
		if op == objstoretest.OpRead {
			select {
			case <-release:
			case <-ctx.Done():
				return ctx.Err()
			}
		}
		return nil
	})
	fake.ResetCounters()
	const readers = 32
	var wg sync.WaitGroup
	errs := make(chan error, readers)
	for i := 0; i < readers; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			h, err := c.OpenObject(context.Background(), info)
			if err != nil {
				errs <- err
				return
			}
			defer func() { _ = h.Close() }()
			p := make([]byte, 1000)
			// All inside block 1, none at its start: whoever comes
			// first, the block is fetched as its part from there and
			// its head (a reader at the start would fetch it whole).
			off := int64(64*kib + 100 + i*100)
			if _, err := h.ReadAt(context.Background(), p, off); err != nil {
				errs <- err
				return
			}
			if !bytes.Equal(p, data[off:off+1000]) {
				errs <- errors.New("wrong bytes")
			}
		}(i)
	}
	// Let the readers pile up on the held GET, then release it.
	time.Sleep(50 * time.Millisecond)
	close(release)
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	// One fetch of the block: the first reader's part to the block's end,
	// and the block's head (fetchEarly), once each.
	if n, b := fake.Calls(objstoretest.OpRead), fake.BytesRead(); n != 2 || b != 64*kib {
		t.Errorf("%d concurrent readers of one block made %d GETs of %d bytes, want 2 GETs of the block's %d", readers, n, b, 64*kib)
	}
}

func TestParallelPartsForBigBlocks(t *testing.T) {
	opts := testOpts()
	opts.CacheBlockSize = 1 * mib
	opts.PartSize = 128 * kib
	opts.MaxParallelFetches = 4
	c, fake, _ := newFixture(t, opts)
	data := randBytes(3, 2*mib+100)
	info := put(t, fake, "parts", data)
	var inflight, peak int64
	var mu sync.Mutex
	fake.SetHook(func(ctx context.Context, op objstoretest.Op, key string) error {
		mu.Lock()
		inflight++
		peak = max(peak, inflight)
		mu.Unlock()
		time.Sleep(5 * time.Millisecond)
		mu.Lock()
		inflight--
		mu.Unlock()
		return nil
	})
	fake.ResetCounters()
	if got := readObject(t, c, info); !bytes.Equal(got, data) {
		t.Fatal("wrong bytes")
	}
	// 2 full blocks of 8 parts each + 1 part for the 100-byte tail.
	if n := fake.Calls(objstoretest.OpRead); n != 17 {
		t.Errorf("%d GETs, want 17", n)
	}
	if peak < 2 || peak > 4 {
		t.Errorf("peak parallel GETs %d, want 2..4 (MaxParallelFetches)", peak)
	}
}

func TestCorruptionRefetches(t *testing.T) {
	tests := []struct {
		name    string
		corrupt func(t *testing.T, path string)
	}{
		{"flipped byte", func(t *testing.T, path string) {
			f, err := os.OpenFile(path, os.O_RDWR, 0)
			if err != nil {
				t.Fatal(err)
			}
			defer func() { _ = f.Close() }()
			b := make([]byte, 1)
			if _, err := f.ReadAt(b, 70*kib); err != nil {
				t.Fatal(err)
			}
			b[0] ^= 0x40
			if _, err := f.WriteAt(b, 70*kib); err != nil {
				t.Fatal(err)
			}
		}},
		{"truncated file", func(t *testing.T, path string) {
			if err := os.Truncate(path, 100*kib); err != nil {
				t.Fatal(err)
			}
		}},
		{"deleted file", func(t *testing.T, path string) {
			if err := os.Remove(path); err != nil {
				t.Fatal(err)
			}
		}},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			fake := objstoretest.NewFake()
			data := randBytes(uint64(10+i), 500*kib)
			info := put(t, fake, "victim", data)
			c := openTest(t, dir, fake, testOpts())
			readObject(t, c, info)
			h := openObj(t, c, info)
			path := h.o.path
			_ = h.Close()
			if err := c.Close(); err != nil {
				t.Fatal(err)
			}
			tt.corrupt(t, path)

			c = openTest(t, dir, fake, testOpts())
			defer func() { _ = c.Close() }()
			fake.ResetCounters()
			if got := readObject(t, c, info); !bytes.Equal(got, data) {
				t.Fatal("read after corruption returned wrong bytes")
			}
			if fake.Calls(objstoretest.OpRead) == 0 {
				t.Error("corrupted block was not refetched")
			}
			if _, err := c.Verify(context.Background()); err != nil {
				t.Errorf("verify after refetch: %v", err)
			}
			fake.ResetCounters()
			if got := readObject(t, c, info); !bytes.Equal(got, data) {
				t.Fatal("second read wrong")
			}
			if n := fake.Calls(objstoretest.OpRead); n != 0 {
				t.Errorf("repaired object still missed: %d GETs", n)
			}
		})
	}
}

func TestVersionChange(t *testing.T) {
	c, fake, _ := newFixture(t, testOpts())
	v1 := randBytes(20, 300*kib)
	info1 := put(t, fake, "doc", v1)
	h1 := openObj(t, c, info1)
	p := make([]byte, 10)
	if _, err := h1.ReadAt(context.Background(), p, 0); err != nil {
		t.Fatal(err)
	}
	// The bucket moves on: cached blocks of v1 still serve the open
	// handle, missing ones fail with ErrPreconditionFailed, never v2 bytes.
	v2 := randBytes(21, 300*kib)
	info2 := put(t, fake, "doc", v2)
	if _, err := h1.ReadAt(context.Background(), p, 0); err != nil || !bytes.Equal(p, v1[:10]) {
		t.Fatalf("cached block of the pinned version: %v", err)
	}
	if _, err := h1.ReadAt(context.Background(), p, 250*kib); !errors.Is(err, objstore.ErrPreconditionFailed) {
		t.Fatalf("missing block of a replaced version: err %v, want ErrPreconditionFailed", err)
	}
	// The attributes were forgotten: Stat asks the bucket again.
	fake.ResetCounters()
	got, err := c.Stat(context.Background(), "doc")
	if err != nil || got.Version != info2.Version {
		t.Fatalf("Stat after version change = %+v, %v; want version %s", got, err, info2.Version)
	}
	if fake.Calls(objstoretest.OpStat) != 1 {
		t.Error("Stat did not revalidate")
	}
	if got := readObject(t, c, info2); !bytes.Equal(got, v2) {
		t.Fatal("new version: wrong bytes")
	}
	_ = h1.Close()
	// Reopening the old version after the new one was cached replaces it.
	h2 := openObj(t, c, info2)
	if p, ok := h2.LocalPath(); !ok {
		t.Error("fully read new version has no LocalPath")
	} else if b, _ := os.ReadFile(p); !bytes.Equal(b, v2) {
		t.Error("LocalPath content differs from the object")
	}
	_ = h2.Close()
}

func TestPrefetchAndLocalPath(t *testing.T) {
	c, fake, _ := newFixture(t, testOpts())
	data := randBytes(30, 1*mib)
	info := put(t, fake, "pf", data)
	h := openObj(t, c, info)
	defer func() { _ = h.Close() }()
	if _, ok := h.LocalPath(); ok {
		t.Fatal("LocalPath of an uncached object")
	}
	h.Prefetch(0, info.Size)
	deadline := time.Now().Add(5 * time.Second)
	for !h.o.allReady() && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	path, ok := h.LocalPath()
	if !ok {
		t.Fatal("no LocalPath after prefetching everything")
	}
	b, err := os.ReadFile(path)
	if err != nil || !bytes.Equal(b, data) {
		t.Fatalf("LocalPath file differs from the object (%v)", err)
	}
	fi, _ := os.Stat(path)
	if fi.Mode().Perm() != 0o600 {
		t.Errorf("data file mode %v, want 0600", fi.Mode().Perm())
	}
	fake.ResetCounters()
	readAll(t, h, 100*kib)
	if n := fake.Calls(objstoretest.OpRead); n != 0 {
		t.Errorf("%d GETs after prefetch", n)
	}
	if c.Stats().Passthrough != 1 {
		t.Errorf("Passthrough = %d, want 1", c.Stats().Passthrough)
	}
}

func TestFetchErrorsAreReturned(t *testing.T) {
	c, fake, _ := newFixture(t, testOpts())
	data := randBytes(40, 200*kib)
	info := put(t, fake, "flaky", data)
	fake.SetError(objstoretest.OpRead, objstore.ErrUnavailable)
	h := openObj(t, c, info)
	defer func() { _ = h.Close() }()
	p := make([]byte, 10)
	if _, err := h.ReadAt(context.Background(), p, 0); !errors.Is(err, objstore.ErrUnavailable) {
		t.Fatalf("err %v, want ErrUnavailable", err)
	}
	fake.SetError(objstoretest.OpRead, nil)
	if got := readAll(t, h, 64*kib); !bytes.Equal(got, data) {
		t.Fatal("read after recovery of the bucket: wrong bytes")
	}
}

func TestReadCancelled(t *testing.T) {
	c, fake, _ := newFixture(t, testOpts())
	info := put(t, fake, "slow", randBytes(41, 100*kib))
	fake.SetLatency(time.Second)
	h := openObj(t, c, info)
	defer func() { _ = h.Close() }()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	if _, err := h.ReadAt(ctx, make([]byte, 10), 0); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("err %v, want DeadlineExceeded", err)
	}
	fake.SetLatency(0)
}

package fuse

import (
	"bytes"
	"fmt"
	"github.com/basin-csi/basin/pkg/mountspec"
	"io"
	"math/rand/v2"
	"os"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/basin-csi/basin/pkg/objstore"
)

// bucketKind opens a fresh bucket of one kind.
type bucketKind struct {
	name string
	open func(t testing.TB) objstore.Store
}

// stores are the buckets the integration tests run against.
var stores = []bucketKind{
	{"file", func(t testing.TB) objstore.Store { s, _ := newFileStore(t); return s }},
	{"minio", func(t testing.TB) objstore.Store { return newMinIOStore(t, nil) }},
}

// namespaceStores add fake-gcs-server, for the tests of names (creating,
// removing and reusing them, directories, links, metadata), whose
// semantics differ between the stores; reads and writes of data are
// covered on GCS by gcsstore's conformance suite.
var namespaceStores = append(stores[:len(stores):len(stores)],
	bucketKind{"gcs", func(t testing.TB) objstore.Store { return newGCSStore(t, gcsBucketConfig(t)) }})

// forEachStore runs fn once per bucket kind of stores and cache kind.
func forEachStore(t *testing.T, kinds []cacheKind, fn func(t *testing.T, store objstore.Store, kind cacheKind)) {
	forEachStoreOf(t, stores, kinds, fn)
}

// forEachStoreOf runs fn once per bucket kind of buckets and cache kind.
func forEachStoreOf(t *testing.T, buckets []bucketKind, kinds []cacheKind, fn func(t *testing.T, store objstore.Store, kind cacheKind)) {
	for _, s := range buckets {
		for _, k := range kinds {
			t.Run(s.name+"/"+string(k), func(t *testing.T) { fn(t, s.open(t), k) })
		}
	}
}

var allCaches = []cacheKind{realCache, fakeLocal, fakeNoLocal}

func TestReadByteExact(t *testing.T) {
	forEachStore(t, allCaches, func(t *testing.T, store objstore.Store, kind cacheKind) {
		small := randomBytes(300<<10+7, 1)
		large := randomBytes(24<<20+4095, 2)
		put(t, store, "small.bin", small)
		put(t, store, "dir/large.bin", large)
		put(t, store, "empty", nil)
		m := mountStore(t, store, mountSpec{cache: kind})

		t.Run("sequential", func(t *testing.T) {
			for name, want := range map[string][]byte{"small.bin": small, "dir/large.bin": large, "empty": {}} {
				got := must(t, "read "+name, func() ([]byte, error) { return os.ReadFile(path(m, name)) })
				if !bytes.Equal(got, want) {
					t.Errorf("%s: got %d bytes, want %d (equal prefix %d)", name, len(got), len(want), commonPrefix(got, want))
				}
			}
		})
		t.Run("random", func(t *testing.T) {
			f := must(t, "open", func() (*os.File, error) { return os.Open(path(m, "dir/large.bin")) })
			defer func() { _ = f.Close() }()
			r := rand.New(rand.NewPCG(1, 2))
			for i := 0; i < 200; i++ {
				off := r.Int64N(int64(len(large)) + 10)
				n := r.IntN(3<<20) + 1
				buf := make([]byte, n)
				got, err := within(t, "pread", func() (int, error) { return f.ReadAt(buf, off) })
				if err != nil && err != io.EOF {
					t.Fatalf("ReadAt(%d, %d): %v", off, n, err)
				}
				end := min(off+int64(n), int64(len(large)))
				want := large[min(off, end):end]
				if !bytes.Equal(buf[:got], want) {
					t.Fatalf("ReadAt(%d, %d): %d bytes differ from the object's %d", off, n, got, len(want))
				}
			}
		})
		t.Run("concurrent", func(t *testing.T) {
			var wg sync.WaitGroup
			errs := make(chan error, 16)
			for g := 0; g < 8; g++ {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for _, c := range []struct {
						name string
						want []byte
					}{{"dir/large.bin", large}, {"small.bin", small}} {
						got, err := os.ReadFile(path(m, c.name))
						if err != nil {
							errs <- err
							return
						}
						if !bytes.Equal(got, c.want) {
							errs <- fmt.Errorf("reader %d: %s differs", g, c.name)
							return
						}
					}
				}()
			}
			must(t, "concurrent readers", func() (struct{}, error) { wg.Wait(); return struct{}{}, nil })
			close(errs)
			for err := range errs {
				t.Error(err)
			}
		})
	})
}

func commonPrefix(a, b []byte) int {
	n := 0
	for n < len(a) && n < len(b) && a[n] == b[n] {
		n++
	}
	return n
}

func TestPassthroughAndKeepCache(t *testing.T) {
	store, _ := newFileStore(t)
	data := randomBytes(8<<20+5, 3)
	put(t, store, "f", data)

	t.Run("passthrough", func(t *testing.T) {
		m := mountStore(t, store, mountSpec{cache: fakeLocal})
		for i := 0; i < 2; i++ {
			got := must(t, "read", func() ([]byte, error) { return os.ReadFile(path(m, "f")) })
			if !bytes.Equal(got, data) {
				t.Fatal("content differs")
			}
		}
		st := m.fsys.Stats()
		if st.PassthroughOpens != 2 || st.UserReadBytes != 0 {
			t.Errorf("stats %+v: want 2 passthrough opens and no user-space reads", st)
		}
		// While the inode is open in passthrough mode, a writer is refused.
		f := must(t, "open", func() (*os.File, error) { return os.Open(path(m, "f")) })
		defer func() { _ = f.Close() }()
		_, err := within(t, "open for write", func() (*os.File, error) { return os.OpenFile(path(m, "f"), os.O_WRONLY, 0) })
		if errnoOf(err) != syscall.ETXTBSY {
			t.Errorf("write open during passthrough: %v, want ETXTBSY", err)
		}
	})
	t.Run("user space with keep cache", func(t *testing.T) {
		m := mountStore(t, store, mountSpec{cache: fakeLocal, cfg: Config{Spec: mountspec.Spec{MetadataTTL: time.Hour}, DisablePassthrough: true}})
		for i := 0; i < 3; i++ {
			got := must(t, "read", func() ([]byte, error) { return os.ReadFile(path(m, "f")) })
			if !bytes.Equal(got, data) {
				t.Fatal("content differs")
			}
		}
		st := m.fsys.Stats()
		if st.PassthroughOpens != 0 || st.UserOpens != 3 {
			t.Errorf("stats %+v: want 3 user-space opens", st)
		}
		// The second and third open kept the page cache: one pass of READs.
		if st.UserReadBytes != int64(len(data)) {
			t.Errorf("user-space read bytes %d, want %d (page cache kept across opens)", st.UserReadBytes, len(data))
		}
	})
}

// TestReadCloseSendsNoFlush: closing a file opened read-only costs no
// FLUSH round trip (FOPEN_NOFLUSH), in passthrough and in user space.
func TestReadCloseSendsNoFlush(t *testing.T) {
	store, _ := newFileStore(t)
	data := randomBytes(100<<10, 4)
	for i := range 5 {
		put(t, store, fmt.Sprintf("f%d", i), data)
	}
	for _, tc := range []struct {
		name string
		cfg  Config
	}{
		{"passthrough", Config{}},
		{"user space", Config{DisablePassthrough: true}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := mountStore(t, store, mountSpec{cache: fakeLocal, cfg: tc.cfg})
			for i := range 5 {
				got := must(t, "read", func() ([]byte, error) { return os.ReadFile(path(m, fmt.Sprintf("f%d", i))) })
				if !bytes.Equal(got, data) {
					t.Fatal("content differs")
				}
			}
			st := m.fsys.Stats()
			if opens := st.PassthroughOpens + st.UserOpens; opens != 5 {
				t.Fatalf("%d read opens, want 5 (stats %+v)", opens, st)
			}
			if n := m.fsys.counters.readFlushes.Load(); n != 0 {
				t.Errorf("%d FLUSH requests for 5 read-only closes, want 0", n)
			}
		})
	}
}

// TestWriteOpenAfterReadClose: a process that reads a file in passthrough
// mode, closes it and at once opens it for writing must not get ETXTBSY
// from its own read open, whose RELEASE the kernel sends after close(2)
// returned (found by make soak: the writer's read-back before its next
// append).
func TestWriteOpenAfterReadClose(t *testing.T) {
	store, _ := newFileStore(t)
	data := randomBytes(64<<10, 5)
	put(t, store, "f", data)
	m := mountStore(t, store, mountSpec{cache: fakeLocal})
	const rounds = 300
	for i := range rounds {
		got := must(t, "read", func() ([]byte, error) { return os.ReadFile(path(m, "f")) })
		if !bytes.Equal(got, data) {
			t.Fatal("content differs")
		}
		f, err := within(t, "open for write", func() (*os.File, error) { return os.OpenFile(path(m, "f"), os.O_WRONLY|os.O_APPEND, 0) })
		if err != nil {
			t.Fatalf("round %d: write open right after a read's close: %v", i, err)
		}
		if err := f.Close(); err != nil {
			t.Fatal(err)
		}
	}
	// Most reads are passthrough opens, the ones a writer waits for (a read
	// whose open meets the last writer's release still counted is served
	// in user space).
	if st := m.fsys.Stats(); st.PassthroughOpens < rounds/2 {
		t.Errorf("stats %+v: want most of the %d reads by passthrough", st, rounds)
	}
}

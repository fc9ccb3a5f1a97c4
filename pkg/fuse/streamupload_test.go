package fuse

import (
	"context"
	"io"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/basin-csi/basin/pkg/objstore"
)

// streamSpy records the streams a file system starts, to watch their
// progress from outside.
type streamSpy struct {
	objstore.Store
	mu      sync.Mutex
	streams []objstore.Stream
}

func (s *streamSpy) StartStream(ctx context.Context, key string, src io.ReaderAt, opts objstore.StreamOptions) (objstore.Stream, error) {
	st, err := s.Store.StartStream(ctx, key, src, opts)
	if err == nil {
		s.mu.Lock()
		s.streams = append(s.streams, st)
		s.mu.Unlock()
	}
	return st, err
}

// sent is the bytes the last stream's store accepted (0: no stream).
func (s *streamSpy) sent() int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.streams) == 0 {
		return 0
	}
	return s.streams[len(s.streams)-1].Sent()
}

// waitSent waits until the last stream uploaded at least n bytes.
func (s *streamSpy) waitSent(t *testing.T, n int64) {
	t.Helper()
	for deadline := time.Now().Add(30 * time.Second); s.sent() < n; time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("streamed %d bytes before close, want at least %d", s.sent(), n)
		}
	}
}

// streamConfig streams from 2 parts of 5 MiB (S3's minimum), 3 in flight.
var streamConfig = Config{StreamPartSize: 5 << 20, StreamParts: 3}

// writeChunks writes data to f from offset off in 1 MiB writes.
func writeChunks(t *testing.T, f *os.File, data []byte, off int64) {
	t.Helper()
	for i := 0; i < len(data); i += 1 << 20 {
		chunk := data[i:min(i+1<<20, len(data))]
		must(t, "write", func() (int, error) { return f.WriteAt(chunk, off+int64(i)) })
	}
}

func closeFile(t *testing.T, f *os.File) {
	t.Helper()
	must(t, "close", func() (struct{}, error) { return struct{}{}, f.Close() })
}

func TestStreamedWrite(t *testing.T) {
	forEachStore(t, []cacheKind{realCache}, func(t *testing.T, store objstore.Store, _ cacheKind) {
		spy := &streamSpy{Store: store}
		m := mountStore(t, spy, mountSpec{cfg: streamConfig})
		data := randomBytes(33<<20+5, 11)
		fallbacks := func() map[string]int64 { return m.fsys.Stats().StreamFallbacks }

		t.Run("sequential", func(t *testing.T) {
			old := []byte("the old checkpoint")
			put(t, store, "seq.bin", old)
			f := must(t, "open", func() (*os.File, error) { return os.OpenFile(path(m, "seq.bin"), os.O_WRONLY|os.O_TRUNC, 0) })
			writeChunks(t, f, data[:25<<20], 0)
			// Parts go up while the file is open, and the old object stays.
			spy.waitSent(t, 10<<20)
			wantObject(t, store, "seq.bin", old)
			writeChunks(t, f, data[25<<20:], 25<<20)
			closeFile(t, f)
			wantObject(t, store, "seq.bin", data)
			st := m.fsys.Stats()
			if st.StreamedUploads != 1 || st.StreamedBytes < 10<<20 {
				t.Errorf("stats %+v: want 1 streamed upload with at least 10 MiB sent before close", st)
			}
			// The 1 MiB appends after the first two parts went past
			// the page cache (stagedsource.go): 23 MiB of them.
			if st.DirectWriteBytes < 20<<20 {
				t.Errorf("%d bytes staged with O_DIRECT, want the appends after the stream started (23 MiB)", st.DirectWriteBytes)
			}
			for reason, n := range st.StreamFallbacks {
				if n != 0 {
					t.Errorf("fallback %s = %d, want none", reason, n)
				}
			}
			got := must(t, "read back", func() ([]byte, error) { return os.ReadFile(path(m, "seq.bin")) })
			if commonPrefix(got, data) != len(data) || len(got) != len(data) {
				t.Errorf("read back %d bytes, want the %d written", len(got), len(data))
			}
		})

		t.Run("small file one put", func(t *testing.T) {
			before := m.fsys.Stats().StreamedUploads
			writeFile(t, path(m, "small.bin"), data[:9<<20], os.O_CREATE|os.O_WRONLY|os.O_TRUNC)
			wantObject(t, store, "small.bin", data[:9<<20])
			if got := m.fsys.Stats().StreamedUploads; got != before {
				t.Errorf("a 9 MiB file was streamed (%d streams, want %d): below two parts it is one upload at close", got, before)
			}
		})

		t.Run("rewrite falls back", func(t *testing.T) {
			before := fallbacks()["rewrite"]
			f := must(t, "create", func() (*os.File, error) { return os.Create(path(m, "rw.bin")) })
			writeChunks(t, f, data[:20<<20], 0)
			spy.waitSent(t, 5<<20)
			patch := []byte("patched in the middle")
			must(t, "rewrite", func() (int, error) { return f.WriteAt(patch, 3<<20) })
			writeChunks(t, f, data[20<<20:], 20<<20)
			closeFile(t, f)
			want := append([]byte(nil), data...)
			copy(want[3<<20:], patch)
			wantObject(t, store, "rw.bin", want)
			if got := fallbacks()["rewrite"]; got != before+1 {
				t.Errorf("rewrite fallbacks = %d, want %d", got, before+1)
			}
		})

		t.Run("truncate falls back", func(t *testing.T) {
			before := fallbacks()["truncate"]
			f := must(t, "create", func() (*os.File, error) { return os.Create(path(m, "tr.bin")) })
			writeChunks(t, f, data[:20<<20], 0)
			spy.waitSent(t, 5<<20)
			must(t, "ftruncate", func() (struct{}, error) { return struct{}{}, f.Truncate(12 << 20) })
			writeChunks(t, f, data[12<<20:], 12<<20)
			closeFile(t, f)
			wantObject(t, store, "tr.bin", data)
			if got := fallbacks()["truncate"]; got != before+1 {
				t.Errorf("truncate fallbacks = %d, want %d", got, before+1)
			}
		})

		t.Run("fsync completes", func(t *testing.T) {
			old := []byte("old")
			put(t, store, "sync.bin", old)
			f := must(t, "open", func() (*os.File, error) { return os.OpenFile(path(m, "sync.bin"), os.O_WRONLY|os.O_TRUNC, 0) })
			writeChunks(t, f, data[:20<<20], 0)
			wantObject(t, store, "sync.bin", old)
			must(t, "fsync", func() (struct{}, error) { return struct{}{}, f.Sync() })
			wantObject(t, store, "sync.bin", data[:20<<20])
			writeChunks(t, f, data[20<<20:], 20<<20) // uploaded at close
			closeFile(t, f)
			wantObject(t, store, "sync.bin", data)
		})

		t.Run("unlink aborts", func(t *testing.T) {
			before := fallbacks()["unlink"]
			f := must(t, "create", func() (*os.File, error) { return os.Create(path(m, "gone.bin")) })
			writeChunks(t, f, data[:20<<20], 0)
			spy.waitSent(t, 5<<20)
			must(t, "unlink", func() (struct{}, error) { return struct{}{}, os.Remove(path(m, "gone.bin")) })
			writeChunks(t, f, data[20<<20:], 20<<20)
			closeFile(t, f)
			wantNoObject(t, store, "gone.bin")
			if got := fallbacks()["unlink"]; got != before+1 {
				t.Errorf("unlink fallbacks = %d, want %d", got, before+1)
			}
		})
	})
}

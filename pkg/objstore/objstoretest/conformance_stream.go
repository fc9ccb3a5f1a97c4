package objstoretest

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"io"
	"sync"
	"testing"
	"time"

	"github.com/basin-csi/basin/pkg/objstore"
)

// testStream: a streamed upload is invisible until Complete, then holds the
// source's bytes; an aborted one leaves the previous object.
func testStream(t *testing.T, h Harness) {
	s := h.NewStore(t)
	const partSize = 5 << 20 // S3's minimum
	data := patternBytes(7, 3*partSize+12345)
	opts := objstore.StreamOptions{PartSize: partSize, Concurrency: 2}

	t.Run("complete", func(t *testing.T) {
		old := mustPut(t, s, "stream/a", []byte("old"))
		st, err := s.StartStream(t.Context(), "stream/a", bytes.NewReader(data), opts)
		if err != nil {
			t.Fatalf("StartStream: %v", err)
		}
		for n := int64(0); n < int64(len(data)); n += 1 << 20 {
			st.Extend(n)
		}
		waitSent(t, st, 2*partSize) // parts go up before Complete
		if got := mustStat(t, s, "stream/a"); got.Version != old.Version {
			t.Errorf("before Complete: Stat = %+v, want the old version %q", got, old.Version)
		}
		info, err := st.Complete(t.Context(), int64(len(data)))
		if err != nil {
			t.Fatalf("Complete: %v", err)
		}
		if info.Version == "" || info.Version == old.Version || info.Key != "stream/a" {
			t.Errorf("Complete = %+v", info)
		}
		if got := mustStat(t, s, "stream/a"); got.Size != int64(len(data)) || got.Version != info.Version {
			t.Errorf("Stat = %+v, want size %d version %q", got, len(data), info.Version)
		}
		got, _ := mustRead(t, s, "stream/a", objstore.ReadOptions{Length: -1})
		if sha256.Sum256(got) != sha256.Sum256(data) {
			t.Errorf("read back %d bytes that differ from the %d streamed", len(got), len(data))
		}
		if st.Sent() != int64(len(data)) {
			t.Errorf("Sent = %d, want %d", st.Sent(), len(data))
		}
		st.Abort() // no effect after Complete
		if got := mustStat(t, s, "stream/a"); got.Version != info.Version {
			t.Errorf("Abort after Complete changed the object: %+v", got)
		}
	})

	t.Run("short", func(t *testing.T) {
		// Less than one part, never extended: one part at Complete.
		st, err := s.StartStream(t.Context(), "stream/short", bytes.NewReader(data), opts)
		if err != nil {
			t.Fatalf("StartStream: %v", err)
		}
		if _, err := st.Complete(t.Context(), 1000); err != nil {
			t.Fatalf("Complete: %v", err)
		}
		got, _ := mustRead(t, s, "stream/short", objstore.ReadOptions{Length: -1})
		if !bytes.Equal(got, data[:1000]) {
			t.Errorf("read back %d bytes, want the first 1000 streamed", len(got))
		}
	})

	t.Run("abort", func(t *testing.T) {
		old := mustPut(t, s, "stream/b", []byte("old"))
		for _, key := range []string{"stream/b", "stream/new"} {
			st, err := s.StartStream(t.Context(), key, bytes.NewReader(data), opts)
			if err != nil {
				t.Fatalf("StartStream: %v", err)
			}
			st.Extend(int64(len(data)))
			waitSent(t, st, partSize)
			st.Abort()
			if _, err := st.Complete(t.Context(), int64(len(data))); !errors.Is(err, objstore.ErrStreamAborted) {
				t.Errorf("Complete after Abort = %v, want ErrStreamAborted", err)
			}
		}
		time.Sleep(200 * time.Millisecond) // the abort runs in the background
		if got, _ := mustRead(t, s, "stream/b", objstore.ReadOptions{Length: -1}); string(got) != "old" {
			t.Errorf("after Abort: %q, want the old object", got)
		}
		if got := mustStat(t, s, "stream/b"); got.Version != old.Version {
			t.Errorf("after Abort: Stat = %+v, want version %q", got, old.Version)
		}
		if _, err := s.Stat(t.Context(), "stream/new"); !errors.Is(err, objstore.ErrNotFound) {
			t.Errorf("aborted new key: Stat err = %v, want ErrNotFound", err)
		}
	})

	t.Run("part reader", func(t *testing.T) {
		// Every part is read with the source's ReadPart, and its
		// buffer released once the part went up.
		src := &partReaderSpy{Reader: bytes.NewReader(data)}
		streamAll(t, s, "stream/parts", src, data, opts)
		if reads, released := src.counts(); reads != 4 || released != 4 {
			t.Errorf("ReadPart called %d times, %d released; want 4 parts, each released", reads, released)
		}
	})

	t.Run("part reader fails", func(t *testing.T) {
		// A failed ReadPart is not the upload's failure: the part is
		// read as a section of the source.
		src := &partReaderSpy{Reader: bytes.NewReader(data), fail: true}
		streamAll(t, s, "stream/parts-failed", src, data, opts)
		if reads, _ := src.counts(); reads != 4 {
			t.Errorf("ReadPart called %d times, want 4", reads)
		}
	})
}

// waitSent waits until the stream's store accepted at least n bytes.
func waitSent(t *testing.T, st objstore.Stream, n int64) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for st.Sent() < n {
		if time.Now().After(deadline) {
			t.Fatalf("Sent = %d after 30 s, want at least %d", st.Sent(), n)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// streamAll streams data from src to key and checks the object.
func streamAll(t *testing.T, s objstore.Store, key string, src io.ReaderAt, data []byte, opts objstore.StreamOptions) {
	t.Helper()
	st, err := s.StartStream(t.Context(), key, src, opts)
	if err != nil {
		t.Fatalf("StartStream: %v", err)
	}
	st.Extend(int64(len(data)))
	if _, err := st.Complete(t.Context(), int64(len(data))); err != nil {
		t.Fatalf("Complete: %v", err)
	}
	got, _ := mustRead(t, s, key, objstore.ReadOptions{Length: -1})
	if sha256.Sum256(got) != sha256.Sum256(data) {
		t.Errorf("read back %d bytes that differ from the %d streamed", len(got), len(data))
	}
}

// partReaderSpy is an objstore.PartReader that counts its parts; with
// fail, every ReadPart fails.
type partReaderSpy struct {
	*bytes.Reader
	fail bool

	mu             sync.Mutex
	reads, release int
}

func (p *partReaderSpy) ReadPart(_ context.Context, off, n int64) ([]byte, func(), error) {
	p.mu.Lock()
	p.reads++
	p.mu.Unlock()
	if p.fail {
		return nil, nil, errors.New("no part buffer")
	}
	buf := make([]byte, n)
	if _, err := p.ReadAt(buf, off); err != nil && !errors.Is(err, io.EOF) {
		return nil, nil, err
	}
	return buf, func() {
		p.mu.Lock()
		p.release++
		p.mu.Unlock()
	}, nil
}

func (p *partReaderSpy) counts() (reads, released int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.reads, p.release
}

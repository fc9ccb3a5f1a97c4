package objstoretest

import (
	"bytes"
	"crypto/sha256"
	"errors"
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

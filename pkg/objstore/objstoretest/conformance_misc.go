package objstoretest

import (
	"bytes"
	"context"
	"io"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/basin-csi/basin/pkg/objstore"
)

func testAccessDenied(t *testing.T, h Harness) {
	if h.NewDeniedStore == nil {
		t.Log("not checked: this backend has no access control (Harness.NewDeniedStore is nil)")
		return
	}
	good := h.NewStore(t)
	mustPut(t, good, "secret", []byte("secret"))
	s := h.NewDeniedStore(t)
	ctx := t.Context()

	_, err := s.Stat(ctx, "secret")
	wantErr(t, "Stat", err, objstore.ErrAccessDenied)
	_, _, err = readRange(ctx, s, "secret", objstore.ReadOptions{Length: -1})
	wantErr(t, "Read", err, objstore.ErrAccessDenied)
	_, err = s.List(ctx, objstore.ListOptions{Delimiter: "/"})
	wantErr(t, "List", err, objstore.ErrAccessDenied)
	_, err = s.Put(ctx, "intruder", bytes.NewReader([]byte("x")), objstore.PutOptions{Size: 1})
	wantErr(t, "Put", err, objstore.ErrAccessDenied)
	if objstore.IsRetryable(err) {
		t.Errorf("access denied must not be retryable: %v", err)
	}
}

func testConcurrentReaders(t *testing.T, h Harness) {
	s := h.NewStore(t)
	const size = 2 << 20
	data := patternBytes(5, size)
	put := mustPut(t, s, "shared", data)
	var wg sync.WaitGroup
	for g := range 16 {
		wg.Go(func() {
			rng := rand.New(rand.NewPCG(uint64(g), 7))
			for range 12 {
				off := rng.Int64N(size)
				n := rng.Int64N(192<<10) + 1
				got, info, err := readRange(t.Context(), s, "shared", objstore.ReadOptions{Offset: off, Length: n, IfVersion: put.Version})
				if err != nil {
					t.Errorf("reader %d: Read(%d, %d): %v", g, off, n, err)
					return
				}
				end := min(off+n, size)
				if !bytes.Equal(got, data[off:end]) || info.Size != size {
					t.Errorf("reader %d: Read(%d, %d) returned %d wrong bytes", g, off, n, len(got))
					return
				}
			}
		})
	}
	wg.Wait()
}

func testCancel(t *testing.T, h Harness) {
	s := h.NewStore(t)
	data := patternBytes(6, 8<<20)
	mustPut(t, s, "big", data)

	t.Run("before the call", func(t *testing.T) {
		ctx, cancel := context.WithCancel(t.Context())
		cancel()
		_, err := s.Stat(ctx, "big")
		wantErr(t, "Stat with a cancelled context", err, context.Canceled)
		_, _, err = readRange(ctx, s, "big", objstore.ReadOptions{Length: -1})
		wantErr(t, "Read with a cancelled context", err, context.Canceled)
		_, err = s.List(ctx, objstore.ListOptions{})
		wantErr(t, "List with a cancelled context", err, context.Canceled)
	})

	t.Run("during the body", func(t *testing.T) {
		ctx, cancel := context.WithCancel(t.Context())
		defer cancel()
		rc, _, err := s.Read(ctx, "big", objstore.ReadOptions{Length: -1})
		if err != nil {
			t.Fatal(err)
		}
		defer func() { _ = rc.Close() }()
		if _, err := io.ReadFull(rc, make([]byte, 1024)); err != nil {
			t.Fatalf("first KiB: %v", err)
		}
		cancel()
		done := make(chan error, 1)
		go func() {
			_, err := io.Copy(io.Discard, rc)
			done <- err
		}()
		// A liveness bound, not a speed goal: a cancelled read must not hang.
		select {
		case err := <-done:
			if err == nil {
				t.Error("the rest of the body was read without error after the context was cancelled")
			}
		case <-time.After(30 * time.Second):
			t.Fatal("reading after cancel still blocks after 30s")
		}
	})

	t.Run("put", func(t *testing.T) {
		ctx, cancel := context.WithCancel(t.Context())
		defer cancel()
		// The body cancels the context after its first MiB and would go on
		// for 64 MiB; the upload must stop and store nothing.
		body := &cancellingReader{r: bytes.NewReader(patternBytes(7, 64<<20)), after: 1 << 20, cancel: cancel}
		done := make(chan error, 1)
		go func() {
			_, err := s.Put(ctx, "cancelled-put", body, objstore.PutOptions{Size: -1})
			done <- err
		}()
		select {
		case err := <-done:
			wantErr(t, "Put cancelled by its context", err, context.Canceled)
		case <-time.After(60 * time.Second):
			t.Fatal("Put with a cancelled context still runs after 60s")
		}
		_, err := s.Stat(t.Context(), "cancelled-put")
		wantErr(t, "Stat of a cancelled Put", err, objstore.ErrNotFound)
	})
}

// cancellingReader calls cancel once more than after bytes were read.
type cancellingReader struct {
	r      io.Reader
	after  int
	cancel context.CancelFunc
	n      int
}

func (c *cancellingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += n
	if c.n > c.after {
		c.cancel()
	}
	return n, err
}

package cache

import (
	"bytes"
	"context"
	"io"
	"sync"
	"testing"
	"time"

	"github.com/basin-csi/basin/pkg/objstore"
	"github.com/basin-csi/basin/pkg/objstore/objstoretest"
)

// partHeldStore holds ranged GETs: a GET at tailOff delivers its first
// tailFree bytes and then waits for release; a GET at headOff waits for
// release before it answers (and fails with headErr, if set). It records
// every range asked for.
type partHeldStore struct {
	*objstoretest.Fake
	headOff, tailOff int64
	tailFree         int
	headErr          error
	release          chan struct{}

	mu     sync.Mutex
	ranges [][2]int64
}

func (s *partHeldStore) Read(ctx context.Context, key string, opts objstore.ReadOptions) (io.ReadCloser, objstore.ObjectInfo, error) {
	s.mu.Lock()
	s.ranges = append(s.ranges, [2]int64{opts.Offset, opts.Length})
	s.mu.Unlock()
	switch opts.Offset {
	case s.headOff:
		<-s.release
		s.mu.Lock()
		err := s.headErr
		s.headErr = nil // once
		s.mu.Unlock()
		if err != nil {
			return nil, objstore.ObjectInfo{}, err
		}
	case s.tailOff:
		rc, info, err := s.Fake.Read(ctx, key, opts)
		if err != nil {
			return nil, info, err
		}
		body := io.MultiReader(io.LimitReader(rc, int64(s.tailFree)), &waitReader{ch: s.release, r: rc})
		return struct {
			io.Reader
			io.Closer
		}{body, rc}, info, nil
	}
	return s.Fake.Read(ctx, key, opts)
}

// waitReader waits for ch to close before its first read.
type waitReader struct {
	ch <-chan struct{}
	r  io.Reader
}

func (w *waitReader) Read(p []byte) (int, error) {
	<-w.ch
	return w.r.Read(p)
}

// TestReaderOfPartOfABlockWaitsForItsBytesOnly: a reader that needs part
// of a missing block of a large object gets its bytes while the rest of
// the block is still on its way (the GET from its part to the block's end
// has delivered them, the GET of the block's head has not answered); the
// block is then stored whole from the two GETs, byte-exact. When the
// head's GET fails, the block is not stored and a later read fetches it
// again.
func TestReaderOfPartOfABlockWaitsForItsBytesOnly(t *testing.T) {
	for _, headErr := range []error{nil, objstore.ErrUnavailable} {
		name := "head arrives"
		if headErr != nil {
			name = "head fails"
		}
		t.Run(name, func(t *testing.T) {
			opts := testOpts()
			bs := opts.CacheBlockSize
			c, fake, _ := newFixture(t, opts)
			data := randBytes(31, int(16*bs))
			info := put(t, fake, "big", data)
			start := 3 * bs
			off := start + bs/2
			s := &partHeldStore{Fake: fake, headOff: start, tailOff: off, tailFree: int(bs / 4), headErr: headErr, release: make(chan struct{})}
			c.store = s
			h := openObj(t, c, info)
			defer func() { _ = h.Close() }()

			got := make([]byte, bs/4)
			done := make(chan error, 1)
			go func() {
				_, err := h.ReadAt(context.Background(), got, off)
				done <- err
			}()
			select {
			case err := <-done:
				if err != nil {
					t.Fatalf("ReadAt: %v", err)
				}
			case <-time.After(10 * time.Second):
				close(s.release)
				t.Fatal("the read waited for the whole block")
			}
			if !bytes.Equal(got, data[off:off+bs/4]) {
				t.Fatal("the early bytes differ from the object's")
			}
			close(s.release)
			waitQuiescent(t, c)
			s.mu.Lock()
			ranges := append([][2]int64(nil), s.ranges...)
			s.mu.Unlock()
			want := [][2]int64{{off, start + bs - off}, {start, off - start}}
			if len(ranges) < 2 || ranges[0] != want[0] || ranges[1] != want[1] {
				t.Errorf("GETs %v, want the part to the block's end first %v, then the head %v", ranges, want[0], want[1])
			}
			all := readAll(t, h, int(bs))
			if !bytes.Equal(all, data) {
				t.Fatal("the object read back differs")
			}
			if headErr != nil {
				s.mu.Lock()
				n := len(s.ranges)
				s.mu.Unlock()
				if n < 3 {
					t.Errorf("%d GETs: the block whose head failed was not fetched again", n)
				}
			}
		})
	}
}

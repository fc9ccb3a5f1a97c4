package fuse

import (
	"testing"

	gofuse "github.com/hanwen/go-fuse/v2/fuse"
)

// TestHeldResultReleasesAtDone: an inode reader is released when go-fuse
// has sent the reply (Done), not before; a spliceable result stays
// spliceable and a vectored one vectored.
func TestHeldResultReleasesAtDone(t *testing.T) {
	for _, tc := range []struct {
		name                 string
		res                  gofuse.ReadResult
		spliceable, vectored bool
	}{
		{"fd", gofuse.ReadResultFd(7, 4096, 100), true, false},
		{"data", dataReply([]byte("abc")), false, true},
		{"plain", gofuse.ReadResultData([]byte("abc")), false, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			released := 0
			h := held(tc.res, func() { released++ })
			if h.Size() != tc.res.Size() {
				t.Errorf("size %d, want %d", h.Size(), tc.res.Size())
			}
			s, ok := h.(seekable)
			if ok != tc.spliceable {
				t.Fatalf("spliceable %v, want %v", ok, tc.spliceable)
			}
			if ok {
				if fd, off, sz := s.Seekable(); fd != 7 || off != 4096 || sz != 100 {
					t.Errorf("Seekable() = %d %d %d", fd, off, sz)
				}
			}
			if _, ok := h.(vectored); ok != tc.vectored {
				t.Errorf("vectored %v, want %v", ok, tc.vectored)
			}
			if released != 0 {
				t.Fatal("released before Done")
			}
			h.Done()
			if released != 1 {
				t.Errorf("released %d times at Done, want 1", released)
			}
		})
	}
}

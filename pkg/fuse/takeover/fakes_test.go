package takeover

import (
	"sync"
	"testing"

	gofuse "github.com/hanwen/go-fuse/v2/fuse"
	"k8s.io/klog/v2"
)

// rawStub answers every open with the handle 7 and the flags in next, and
// records releases.
type rawStub struct {
	gofuse.RawFileSystem
	next     uint32
	released []uint64
}

func (r *rawStub) Open(_ <-chan struct{}, _ *gofuse.OpenIn, out *gofuse.OpenOut) gofuse.Status {
	out.Fh, out.OpenFlags = 7, r.next
	return gofuse.OK
}

// Lookup revives any node (a resumed session asks before serving it).
func (r *rawStub) Lookup(_ <-chan struct{}, h *gofuse.InHeader, _ string, out *gofuse.EntryOut) gofuse.Status {
	out.NodeId = h.NodeId
	return gofuse.OK
}

func (r *rawStub) Release(_ <-chan struct{}, in *gofuse.ReleaseIn) {
	r.released = append(r.released, in.Fh)
}

func open(t *testing.T, s *sessionFS, ino uint64, flags uint32) (gofuse.OpenOut, gofuse.Status) {
	t.Helper()
	var out gofuse.OpenOut
	st := s.Open(nil, &gofuse.OpenIn{InHeader: gofuse.InHeader{NodeId: ino}, Flags: flags}, &out)
	return out, st
}

func release(s *sessionFS, ino, fh uint64) {
	s.Release(nil, &gofuse.ReleaseIn{InHeader: gofuse.InHeader{NodeId: ino}, Fh: fh})
}

// hookRecorder is the wrapped file system's side of the hooks: it records
// orphaned inodes and the resent requests marked ("op name"), and counts
// the marks in force.
type hookRecorder struct {
	mu       sync.Mutex
	orphaned []uint64
	resent   []string
	live     int
}

func (r *hookRecorder) Orphaned(ino uint64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.orphaned = append(r.orphaned, ino)
}

func (r *hookRecorder) Resending(op Op, name string) func() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.resent = append(r.resent, op.String()+" "+name)
	r.live++
	return func() {
		r.mu.Lock()
		defer r.mu.Unlock()
		r.live--
	}
}

// marks is the number of marks in force.
func (r *hookRecorder) marks() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.live
}

// newTestFS is the shim over raw with recorded hooks.
func newTestFS(t *testing.T, raw gofuse.RawFileSystem, resumed bool) (*sessionFS, *hookRecorder) {
	t.Helper()
	h := &hookRecorder{}
	return newSessionFS(raw, h, klog.Background(), resumed), h
}

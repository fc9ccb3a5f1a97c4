package takeover

import (
	"slices"
	"syscall"
	"testing"

	gofuse "github.com/hanwen/go-fuse/v2/fuse"
)

// markStub records, for each mutation, whether the session had marked it
// as resent while the file system answered it; Mkdir fails as the
// predecessor's mkdir would make it fail.
type markStub struct {
	gofuse.RawFileSystem
	marks  *hookRecorder
	marked []bool
}

func (m *markStub) seen() { m.marked = append(m.marked, m.marks.marks() > 0) }

func (m *markStub) Unlink(<-chan struct{}, *gofuse.InHeader, string) gofuse.Status {
	m.seen()
	return gofuse.OK
}

func (m *markStub) Rmdir(<-chan struct{}, *gofuse.InHeader, string) gofuse.Status {
	m.seen()
	return gofuse.OK
}

func (m *markStub) Rename(<-chan struct{}, *gofuse.RenameIn, string, string) gofuse.Status {
	m.seen()
	return gofuse.OK
}

func (m *markStub) Create(<-chan struct{}, *gofuse.CreateIn, string, *gofuse.CreateOut) gofuse.Status {
	m.seen()
	return gofuse.Status(syscall.EEXIST)
}

func (*markStub) Mkdir(<-chan struct{}, *gofuse.MkdirIn, string, *gofuse.EntryOut) gofuse.Status {
	return gofuse.Status(syscall.EEXIST)
}

func (*markStub) Lookup(_ <-chan struct{}, _ *gofuse.InHeader, _ string, out *gofuse.EntryOut) gofuse.Status {
	out.NodeId, out.Mode = 42, syscall.S_IFDIR|0o755
	return gofuse.OK
}

// TestSessionMarksResentMutations: the session marks an unlink, rmdir,
// rename or create for the file system only when the kernel resent it, and answers
// a resent mkdir that finds the directory with the directory's entry.
func TestSessionMarksResentMutations(t *testing.T) {
	for _, resend := range []bool{false, true} {
		stub := &markStub{RawFileSystem: gofuse.NewDefaultRawFileSystem()}
		s, rec := newTestFS(t, stub, false)
		stub.marks = rec
		h := gofuse.InHeader{NodeId: gofuse.FUSE_ROOT_ID, Unique: 8}
		if resend {
			h.Unique |= resendBit
		}
		s.Unlink(nil, &h, "old.pt")
		s.Rmdir(nil, &h, "old")
		s.Rename(nil, &gofuse.RenameIn{InHeader: h, Newdir: gofuse.FUSE_ROOT_ID}, "ckpt.pt.tmp", "ckpt.pt")
		s.Create(nil, &gofuse.CreateIn{InHeader: h}, "lock", &gofuse.CreateOut{})
		if len(stub.marked) != 4 || slices.Contains(stub.marked, !resend) || rec.marks() != 0 {
			t.Errorf("resent %v: marked during unlink, rmdir, rename, create %v (%d left), want all %v and none left", resend, stub.marked, rec.marks(), resend)
		}
		if want := []string{"unlink old.pt", "rmdir old", "rename ckpt.pt.tmp", "create lock"}; resend && !slices.Equal(rec.resent, want) {
			t.Errorf("marked %q, want %q", rec.resent, want)
		}
		var out gofuse.EntryOut
		st := s.Mkdir(nil, &gofuse.MkdirIn{InHeader: h}, "step-10", &out)
		if want := map[bool]gofuse.Status{false: gofuse.Status(syscall.EEXIST), true: gofuse.OK}[resend]; st != want || (st.Ok() && out.NodeId != 42) {
			t.Errorf("resent %v: mkdir of an existing directory: %v (node %d), want %v", resend, st, out.NodeId, want)
		}
	}
}

package fuse

import (
	"syscall"
	"testing"
	"time"

	gofuse "github.com/hanwen/go-fuse/v2/fuse"
)

// markStub records, for each mutation, whether the session had marked it
// as resent while the file system answered it; Mkdir fails as the
// predecessor's mkdir would make it fail.
type markStub struct {
	gofuse.RawFileSystem
	marks  *markRecorder
	marked []bool
}

func (m *markStub) seen() { m.marked = append(m.marked, m.marks.live > 0) }

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

func (*markStub) Mkdir(<-chan struct{}, *gofuse.MkdirIn, string, *gofuse.EntryOut) gofuse.Status {
	return gofuse.Status(syscall.EEXIST)
}

func (*markStub) Lookup(_ <-chan struct{}, _ *gofuse.InHeader, _ string, out *gofuse.EntryOut) gofuse.Status {
	out.NodeId, out.Mode = 42, syscall.S_IFDIR|0o755
	return gofuse.OK
}

// markRecorder counts the marks in force.
type markRecorder struct{ live int }

func (r *markRecorder) resending(resentOp, string) func() {
	r.live++
	return func() { r.live-- }
}

// TestSessionMarksResentMutations: the session marks an unlink, rmdir or
// rename for the file system only when the kernel resent it, and answers
// a resent mkdir that finds the directory with the directory's entry.
func TestSessionMarksResentMutations(t *testing.T) {
	for _, resend := range []bool{false, true} {
		rec := &markRecorder{}
		stub := &markStub{RawFileSystem: gofuse.NewDefaultRawFileSystem(), marks: rec}
		s := newSessionFS(stub, false)
		s.marker = rec
		h := gofuse.InHeader{NodeId: gofuse.FUSE_ROOT_ID, Unique: 8}
		if resend {
			h.Unique |= resendBit
		}
		s.Unlink(nil, &h, "old.pt")
		s.Rmdir(nil, &h, "old")
		s.Rename(nil, &gofuse.RenameIn{InHeader: h, Newdir: gofuse.FUSE_ROOT_ID}, "ckpt.pt.tmp", "ckpt.pt")
		if len(stub.marked) != 3 || stub.marked[0] != resend || stub.marked[1] != resend || stub.marked[2] != resend || rec.live != 0 {
			t.Errorf("resent %v: marked during unlink, rmdir, rename %v (%d left), want all %v and none left", resend, stub.marked, rec.live, resend)
		}
		var out gofuse.EntryOut
		st := s.Mkdir(nil, &gofuse.MkdirIn{InHeader: h}, "step-10", &out)
		if want := map[bool]gofuse.Status{false: gofuse.Status(syscall.EEXIST), true: gofuse.OK}[resend]; st != want || (st.Ok() && out.NodeId != 42) {
			t.Errorf("resent %v: mkdir of an existing directory: %v (node %d), want %v", resend, st, out.NodeId, want)
		}
	}
}

// TestCarriedOut checks which answers of the file system a resent request
// turns into success: ENOENT (and EEXIST for a rename), once the request
// is marked and the check confirms it, and nothing else.
func TestCarriedOut(t *testing.T) {
	f := &FS{}
	yes, no := func() bool { return true }, func() bool { return false }
	if got := f.carriedOut(resentUnlink, "a", syscall.ENOENT, nil); got != syscall.ENOENT {
		t.Errorf("unmarked unlink: %v, want ENOENT", got)
	}
	done := f.resending(resentUnlink, "a")
	for _, tc := range []struct {
		op    resentOp
		name  string
		errno syscall.Errno
		check func() bool
		want  syscall.Errno
	}{
		{resentUnlink, "a", syscall.ENOENT, nil, 0},
		{resentUnlink, "a", syscall.EIO, nil, syscall.EIO},
		{resentUnlink, "a", syscall.EEXIST, nil, syscall.EEXIST},
		{resentUnlink, "b", syscall.ENOENT, nil, syscall.ENOENT}, // not marked
		{resentRmdir, "a", syscall.ENOENT, nil, syscall.ENOENT},  // marked as an unlink
	} {
		if got := f.carriedOut(tc.op, tc.name, tc.errno, tc.check); got != tc.want {
			t.Errorf("%s %s answered %v: %v, want %v", resentOpNames[tc.op], tc.name, tc.errno, got, tc.want)
		}
	}
	done()
	if got := f.carriedOut(resentUnlink, "a", syscall.ENOENT, nil); got != syscall.ENOENT {
		t.Errorf("unlink after the mark ended: %v, want ENOENT", got)
	}
	defer f.resending(resentRename, "c.tmp")()
	for _, tc := range []struct {
		errno syscall.Errno
		check func() bool
		want  syscall.Errno
	}{
		{syscall.ENOENT, yes, 0},
		{syscall.EEXIST, yes, 0},
		{syscall.ENOENT, no, syscall.ENOENT},
		{syscall.EXDEV, yes, syscall.EXDEV},
	} {
		if got := f.carriedOut(resentRename, "c.tmp", tc.errno, tc.check); got != tc.want {
			t.Errorf("rename answered %v, bucket done %v: %v, want %v", tc.errno, tc.check(), got, tc.want)
		}
	}
}

// TestRenameDoneAsksTheBucket checks FS.renameDone on a real cache and
// store: a rename the bucket shows carried out (the source gone, the
// destination there, done behind the mount's back as by a predecessor
// that died before its reply) is reported done and moves the source's
// inode number to the destination; one whose source is still there, or
// with neither, is not.
func TestRenameDoneAsksTheBucket(t *testing.T) {
	store, _ := newFileStore(t)
	put(t, store, "run/ckpt.pt.tmp", []byte("weights"))
	put(t, store, "run/other.tmp", []byte("x"))
	m := mountStore(t, store, mountSpec{cache: realCache, cfg: Config{MetadataTTL: time.Minute}})
	var src syscall.Stat_t
	if err := syscall.Stat(path(m, "run/ckpt.pt.tmp"), &src); err != nil {
		t.Fatal(err)
	}
	if _, err := store.Copy(t.Context(), "run/ckpt.pt.tmp", "run/ckpt.pt"); err != nil {
		t.Fatal(err)
	}
	if err := store.Delete(t.Context(), "run/ckpt.pt.tmp"); err != nil {
		t.Fatal(err)
	}
	if !m.fsys.renameDone("run/ckpt.pt.tmp", "run/ckpt.pt") {
		t.Fatal("a rename carried out in the bucket was not seen as done")
	}
	if p, ok := m.cache.PathOf(src.Ino); !ok || p != "run/ckpt.pt" {
		t.Errorf("the source's inode number now names %q (%v), want run/ckpt.pt", p, ok)
	}
	if m.fsys.renameDone("run/other.tmp", "run/ckpt.pt") {
		t.Error("a rename whose source is still in the bucket was seen as done")
	}
	if m.fsys.renameDone("nothing", "run/none.pt") {
		t.Error("a rename with neither source nor destination was seen as done")
	}
}

package fuse

import (
	"context"
	"syscall"

	gofuse "github.com/hanwen/go-fuse/v2/fuse"
	"k8s.io/klog/v2"
)

// After a takeover the kernel resends every request the dead process had
// read but not answered (resendBit in the unique). The predecessor may
// have carried a non-idempotent one out and died before its reply: the
// object renamed, removed or created in the bucket. Done again, such a
// request fails (ENOENT, EEXIST) although it succeeded, and the caller's
// rename(2) of a checkpoint saved under a temporary name, or its unlink of
// an old one, reports an error. So a resent UNLINK, RMDIR, RENAME or MKDIR
// that fails in the way the predecessor's success would make it fail is
// answered as the predecessor would have: a resent unlink or rmdir that
// finds nothing (the kernel sent it for a name it knew), a resent rename
// whose source is gone and whose destination is in the bucket, a resent
// mkdir that finds the directory. The file system's node answers it (the
// session marks the request, FS.resending), so that go-fuse's tree of
// nodes changes as the kernel's does.

// resent reports whether h is a request the kernel resent after a
// takeover.
func resent(h *gofuse.InHeader) bool { return h.Unique&resendBit != 0 }

// resentOp is a kind of request answered as done when resent.
type resentOp int

const (
	resentUnlink resentOp = iota
	resentRmdir
	resentRename
)

var resentOpNames = [...]string{resentUnlink: "unlink", resentRmdir: "rmdir", resentRename: "rename"}

// resentKey is a resent request under way in the file system, by its
// kind and name (the same name resent in two directories at once would
// only cost a check of the bucket).
type resentKey struct {
	op   resentOp
	name string
}

// marker marks resent requests for the file system (FS).
type marker interface {
	resending(op resentOp, name string) (done func())
}

// resending marks a resent request of op on name until done is called.
func (f *FS) resending(op resentOp, name string) (done func()) {
	k := resentKey{op, name}
	f.resent.Store(k, struct{}{})
	return func() { f.resent.Delete(k) }
}

// carriedOut turns errno, the file system's answer to op on name, into
// success when the request is a resent one and errno is what the
// predecessor's success causes (ENOENT; EEXIST for a rename that must
// not replace), and done (nil: nothing more to check) confirms it.
func (f *FS) carriedOut(op resentOp, name string, errno syscall.Errno, done func() bool) syscall.Errno {
	if errno != syscall.ENOENT && (op != resentRename || errno != syscall.EEXIST) {
		return errno
	}
	if _, ok := f.resent.Load(resentKey{op, name}); !ok || (done != nil && !done()) {
		return errno
	}
	klog.InfoS("a request resent after the takeover was carried out by the previous process", "volume", f.cfg.VolumeID, "op", resentOpNames[op], "name", name, "got", errno)
	return 0
}

// renameDone reports whether the rename of src to dst looks carried out
// in the bucket: no source, a destination (asked of the bucket, not the
// cache's metadata, which the predecessor may not have updated). If so it
// does what the rename does after the bucket: invalidate both names and
// move the inode numbers (a no-op if the predecessor did).
func (f *FS) renameDone(src, dst string) bool {
	ctx, cancel := f.opContext(context.Background())
	defer cancel()
	if k, err := f.kindOf(ctx, src, true); err != nil || k != kindNone {
		return false
	}
	if k, err := f.kindOf(ctx, dst, true); err != nil || k == kindNone {
		return false
	}
	f.cache.Invalidate(src)
	f.cache.Invalidate(dst)
	f.moveInodes(src, dst)
	return true
}

// The four requests, as sessionFS passes them on.

func (s *sessionFS) Mkdir(cancel <-chan struct{}, in *gofuse.MkdirIn, name string, out *gofuse.EntryOut) gofuse.Status {
	if st := s.node(&in.InHeader, in.NodeId); !st.Ok() {
		return st
	}
	st := s.RawFileSystem.Mkdir(cancel, in, name, out)
	s.entered(st, out)
	if st == gofuse.Status(syscall.EEXIST) && resent(&in.InHeader) {
		// The directory the predecessor made: answer with its entry.
		var e gofuse.EntryOut
		if s.Lookup(cancel, &in.InHeader, name, &e).Ok() && e.Mode&syscall.S_IFMT == syscall.S_IFDIR {
			klog.InfoS("a request resent after the takeover was carried out by the previous process", "op", "mkdir", "name", name, "got", st)
			*out = e
			return gofuse.OK
		}
	}
	return st
}

func (s *sessionFS) Unlink(cancel <-chan struct{}, h *gofuse.InHeader, name string) gofuse.Status {
	if st := s.node(h, h.NodeId); !st.Ok() {
		return st
	}
	defer s.mark(h, resentUnlink, name)()
	return s.RawFileSystem.Unlink(cancel, h, name)
}

func (s *sessionFS) Rmdir(cancel <-chan struct{}, h *gofuse.InHeader, name string) gofuse.Status {
	if st := s.node(h, h.NodeId); !st.Ok() {
		return st
	}
	defer s.mark(h, resentRmdir, name)()
	return s.RawFileSystem.Rmdir(cancel, h, name)
}

func (s *sessionFS) Rename(cancel <-chan struct{}, in *gofuse.RenameIn, oldName, newName string) gofuse.Status {
	if st := s.node(&in.InHeader, in.NodeId); !st.Ok() {
		return st
	}
	if st := s.node(&in.InHeader, in.Newdir); !st.Ok() {
		return st
	}
	defer s.mark(&in.InHeader, resentRename, oldName)()
	return s.RawFileSystem.Rename(cancel, in, oldName, newName)
}

// mark marks a resent request for the file system until the returned
// function is called.
func (s *sessionFS) mark(h *gofuse.InHeader, op resentOp, name string) (done func()) {
	if !resent(h) || s.marker == nil {
		return func() {}
	}
	return s.marker.resending(op, name)
}

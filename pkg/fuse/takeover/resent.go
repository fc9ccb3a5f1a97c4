package takeover

import (
	"strconv"
	"syscall"

	gofuse "github.com/hanwen/go-fuse/v2/fuse"
)

// After a takeover the kernel resends every request the dead process had
// read but not answered (resendBit in the unique). The predecessor may
// have carried a non-idempotent one out and died before its reply: the
// object renamed, removed or created in the bucket. Done again, such a
// request fails (ENOENT, EEXIST) although it succeeded, and the caller's
// rename(2) of a checkpoint saved under a temporary name, or its unlink of
// an old one, reports an error. So a resent UNLINK, RMDIR or RENAME is
// marked for the file system (Hooks.Resending) while it answers it: the
// file system's node then answers as the predecessor would have when it
// fails the way the predecessor's success makes it fail, so that go-fuse's
// tree of nodes changes as the kernel's does. A resent MKDIR that finds
// the directory is answered here, with the directory's entry.

// resendBit is set in the unique of a request the kernel resends
// (FUSE_NOTIFY_RESEND): the request's first unique with this bit.
const resendBit = 1 << 63

// resent reports whether h is a request the kernel resent after a
// takeover.
func resent(h *gofuse.InHeader) bool { return h.Unique&resendBit != 0 }

// Op is a kind of request whose resent copy the file system may answer as
// done (Hooks.Resending).
type Op int

const (
	OpUnlink Op = iota
	OpRmdir
	OpRename
	// OpCreate: the file system answers a resent exclusive CREATE whose
	// claim the predecessor made (pkg/fuse, claims.go).
	OpCreate
)

func (o Op) String() string {
	switch o {
	case OpUnlink:
		return "unlink"
	case OpRmdir:
		return "rmdir"
	case OpRename:
		return "rename"
	case OpCreate:
		return "create"
	}
	return "op(" + strconv.Itoa(int(o)) + ")"
}

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
			s.log.Info("a request resent after the takeover was carried out by the previous process", "op", "mkdir", "name", name, "got", st)
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
	defer s.mark(h, OpUnlink, name)()
	return s.RawFileSystem.Unlink(cancel, h, name)
}

func (s *sessionFS) Rmdir(cancel <-chan struct{}, h *gofuse.InHeader, name string) gofuse.Status {
	if st := s.node(h, h.NodeId); !st.Ok() {
		return st
	}
	defer s.mark(h, OpRmdir, name)()
	return s.RawFileSystem.Rmdir(cancel, h, name)
}

func (s *sessionFS) Rename(cancel <-chan struct{}, in *gofuse.RenameIn, oldName, newName string) gofuse.Status {
	if st := s.node(&in.InHeader, in.NodeId); !st.Ok() {
		return st
	}
	if st := s.node(&in.InHeader, in.Newdir); !st.Ok() {
		return st
	}
	defer s.mark(&in.InHeader, OpRename, oldName)()
	return s.RawFileSystem.Rename(cancel, in, oldName, newName)
}

// mark marks a resent request for the file system until the returned
// function is called.
func (s *sessionFS) mark(h *gofuse.InHeader, op Op, name string) (done func()) {
	if !resent(h) {
		return func() {}
	}
	return s.hooks.Resending(op, name)
}

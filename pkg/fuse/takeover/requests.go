package takeover

import (
	gofuse "github.com/hanwen/go-fuse/v2/fuse"
)

// The RawFileSystem methods of sessionFS that carry node IDs or file
// handles (see rawfs.go). Each revives unknown nodes, maps handles, and
// forwards to the bridge.

func (s *sessionFS) Lookup(cancel <-chan struct{}, h *gofuse.InHeader, name string, out *gofuse.EntryOut) gofuse.Status {
	if st := s.node(h, h.NodeId); !st.Ok() {
		return st
	}
	st := s.RawFileSystem.Lookup(cancel, h, name, out)
	s.entered(st, out)
	return st
}

func (s *sessionFS) GetAttr(cancel <-chan struct{}, in *gofuse.GetAttrIn, out *gofuse.AttrOut) gofuse.Status {
	if st := s.node(&in.InHeader, in.NodeId); !st.Ok() {
		return st
	}
	if in.Flags_&gofuse.FUSE_GETATTR_FH != 0 && !s.keep(&in.Fh_) {
		in.Flags_ &^= gofuse.FUSE_GETATTR_FH
	}
	return s.RawFileSystem.GetAttr(cancel, in, out)
}

func (s *sessionFS) SetAttr(cancel <-chan struct{}, in *gofuse.SetAttrIn, out *gofuse.AttrOut) gofuse.Status {
	if st := s.node(&in.InHeader, in.NodeId); !st.Ok() {
		return st
	}
	if fh, ok := in.GetFh(); ok {
		if fh&fhWritable != 0 {
			// ftruncate: the inherited writer's own handle carries it.
			bfh, st := s.handle(&in.InHeader, fh, 0, false)
			if !st.Ok() {
				return st
			}
			in.Fh = bfh
		} else if !s.keep(&in.Fh) {
			in.Valid &^= gofuse.FATTR_FH
		}
	}
	return s.RawFileSystem.SetAttr(cancel, in, out)
}

func (s *sessionFS) Mknod(cancel <-chan struct{}, in *gofuse.MknodIn, name string, out *gofuse.EntryOut) gofuse.Status {
	if st := s.node(&in.InHeader, in.NodeId); !st.Ok() {
		return st
	}
	st := s.RawFileSystem.Mknod(cancel, in, name, out)
	s.entered(st, out)
	return st
}

func (s *sessionFS) Link(cancel <-chan struct{}, in *gofuse.LinkIn, name string, out *gofuse.EntryOut) gofuse.Status {
	if st := s.node(&in.InHeader, in.NodeId); !st.Ok() {
		return st
	}
	if st := s.node(&in.InHeader, in.Oldnodeid); !st.Ok() {
		return st
	}
	st := s.RawFileSystem.Link(cancel, in, name, out)
	s.entered(st, out)
	return st
}

func (s *sessionFS) Symlink(cancel <-chan struct{}, h *gofuse.InHeader, target, name string, out *gofuse.EntryOut) gofuse.Status {
	if st := s.node(h, h.NodeId); !st.Ok() {
		return st
	}
	st := s.RawFileSystem.Symlink(cancel, h, target, name, out)
	s.entered(st, out)
	return st
}

func (s *sessionFS) Readlink(cancel <-chan struct{}, h *gofuse.InHeader) ([]byte, gofuse.Status) {
	if st := s.node(h, h.NodeId); !st.Ok() {
		return nil, st
	}
	return s.RawFileSystem.Readlink(cancel, h)
}

func (s *sessionFS) Access(cancel <-chan struct{}, in *gofuse.AccessIn) gofuse.Status {
	if st := s.node(&in.InHeader, in.NodeId); !st.Ok() {
		return st
	}
	return s.RawFileSystem.Access(cancel, in)
}

func (s *sessionFS) GetXAttr(cancel <-chan struct{}, h *gofuse.InHeader, attr string, dest []byte) (uint32, gofuse.Status) {
	if st := s.node(h, h.NodeId); !st.Ok() {
		return 0, st
	}
	return s.RawFileSystem.GetXAttr(cancel, h, attr, dest)
}

func (s *sessionFS) ListXAttr(cancel <-chan struct{}, h *gofuse.InHeader, dest []byte) (uint32, gofuse.Status) {
	if st := s.node(h, h.NodeId); !st.Ok() {
		return 0, st
	}
	return s.RawFileSystem.ListXAttr(cancel, h, dest)
}

func (s *sessionFS) SetXAttr(cancel <-chan struct{}, in *gofuse.SetXAttrIn, attr string, data []byte) gofuse.Status {
	if st := s.node(&in.InHeader, in.NodeId); !st.Ok() {
		return st
	}
	return s.RawFileSystem.SetXAttr(cancel, in, attr, data)
}

func (s *sessionFS) RemoveXAttr(cancel <-chan struct{}, h *gofuse.InHeader, attr string) gofuse.Status {
	if st := s.node(h, h.NodeId); !st.Ok() {
		return st
	}
	return s.RawFileSystem.RemoveXAttr(cancel, h, attr)
}

func (s *sessionFS) Create(cancel <-chan struct{}, in *gofuse.CreateIn, name string, out *gofuse.CreateOut) gofuse.Status {
	defer s.mark(&in.InHeader, OpCreate, name)()
	return s.created(cancel, in, out, func() gofuse.Status { return s.RawFileSystem.Create(cancel, in, name, out) })
}

func (s *sessionFS) Tmpfile(cancel <-chan struct{}, in *gofuse.CreateIn, out *gofuse.CreateOut) gofuse.Status {
	return s.created(cancel, in, out, func() gofuse.Status { return s.RawFileSystem.Tmpfile(cancel, in, out) })
}

// created runs create, a request that makes a node and opens it (CREATE,
// TMPFILE), on a known parent, and counts the lookup and the open.
func (s *sessionFS) created(cancel <-chan struct{}, in *gofuse.CreateIn, out *gofuse.CreateOut, create func() gofuse.Status) gofuse.Status {
	if st := s.node(&in.InHeader, in.NodeId); !st.Ok() {
		return st
	}
	st := create()
	s.entered(st, &out.EntryOut)
	return s.opened(cancel, st, &in.InHeader, out.NodeId, in.Flags, &out.OpenOut, true)
}

func (s *sessionFS) Open(cancel <-chan struct{}, in *gofuse.OpenIn, out *gofuse.OpenOut) gofuse.Status {
	if st := s.node(&in.InHeader, in.NodeId); !st.Ok() {
		return st
	}
	if s.resumed && writes(in.Flags) {
		s.awaitUnpinned(in.NodeId)
	}
	st := s.RawFileSystem.Open(cancel, in, out)
	return s.opened(cancel, st, &in.InHeader, in.NodeId, in.Flags, out, true)
}

func (s *sessionFS) Read(cancel <-chan struct{}, in *gofuse.ReadIn, buf []byte) (gofuse.ReadResult, gofuse.Status) {
	if st := s.node(&in.InHeader, in.NodeId); !st.Ok() {
		return nil, st
	}
	fh, st := s.handle(&in.InHeader, in.Fh, in.Flags, false)
	if !st.Ok() {
		return nil, st
	}
	in.Fh = fh
	return s.RawFileSystem.Read(cancel, in, buf)
}

func (s *sessionFS) Lseek(cancel <-chan struct{}, in *gofuse.LseekIn, out *gofuse.LseekOut) gofuse.Status {
	if st := s.node(&in.InHeader, in.NodeId); !st.Ok() {
		return st
	}
	fh, st := s.handle(&in.InHeader, in.Fh, 0, false)
	if !st.Ok() {
		return st
	}
	in.Fh = fh
	return s.RawFileSystem.Lseek(cancel, in, out)
}

func (s *sessionFS) lk(cancel <-chan struct{}, in *gofuse.LkIn) gofuse.Status {
	if st := s.node(&in.InHeader, in.NodeId); !st.Ok() {
		return st
	}
	fh, st := s.handle(&in.InHeader, in.Fh, 0, false)
	in.Fh = fh
	return st
}

func (s *sessionFS) GetLk(cancel <-chan struct{}, in *gofuse.LkIn, out *gofuse.LkOut) gofuse.Status {
	if st := s.lk(cancel, in); !st.Ok() {
		return st
	}
	return s.RawFileSystem.GetLk(cancel, in, out)
}

func (s *sessionFS) SetLk(cancel <-chan struct{}, in *gofuse.LkIn) gofuse.Status {
	if st := s.lk(cancel, in); !st.Ok() {
		return st
	}
	return s.RawFileSystem.SetLk(cancel, in)
}

func (s *sessionFS) SetLkw(cancel <-chan struct{}, in *gofuse.LkIn) gofuse.Status {
	if st := s.lk(cancel, in); !st.Ok() {
		return st
	}
	return s.RawFileSystem.SetLkw(cancel, in)
}

func (s *sessionFS) Release(cancel <-chan struct{}, in *gofuse.ReleaseIn) {
	defer s.released(in.NodeId, in.Fh, in.Unique) // counted even if the node cannot be revived
	if st := s.node(&in.InHeader, in.NodeId); !st.Ok() {
		return
	}
	mode := handleMode(in.Fh)
	if in.Fh = s.release(in.Fh); in.Fh != 0 {
		if mode != modePassthrough {
			defer s.holdPassthrough(in.NodeId)()
		}
		s.RawFileSystem.Release(cancel, in)
	}
}

func (s *sessionFS) Write(cancel <-chan struct{}, in *gofuse.WriteIn, data []byte) (uint32, gofuse.Status) {
	if st := s.writable(cancel, in); !st.Ok() {
		return 0, st
	}
	return s.RawFileSystem.Write(cancel, in, data)
}

func (s *sessionFS) Writev(cancel <-chan struct{}, in *gofuse.WriteIn, data [][]byte) (uint32, gofuse.Status) {
	if st := s.writable(cancel, in); !st.Ok() {
		return 0, st
	}
	return s.RawFileSystem.Writev(cancel, in, data)
}

// writable maps the handle of a write, adopting an inherited writer's.
func (s *sessionFS) writable(cancel <-chan struct{}, in *gofuse.WriteIn) gofuse.Status {
	if st := s.node(&in.InHeader, in.NodeId); !st.Ok() {
		return st
	}
	fh, st := s.handle(&in.InHeader, in.Fh, in.Flags, false)
	in.Fh = fh
	return st
}

func (s *sessionFS) CopyFileRange(cancel <-chan struct{}, in *gofuse.CopyFileRangeIn) (uint32, gofuse.Status) {
	if st := s.node(&in.InHeader, in.NodeId); !st.Ok() {
		return 0, st
	}
	if st := s.node(&in.InHeader, in.NodeIdOut); !st.Ok() {
		return 0, st
	}
	fhOut, st := s.handle(&in.InHeader, in.FhOut, 0, false)
	if !st.Ok() {
		return 0, st
	}
	in.FhOut = fhOut
	fh, st := s.handle(&in.InHeader, in.FhIn, 0, false)
	if !st.Ok() {
		return 0, st
	}
	in.FhIn = fh
	return s.RawFileSystem.CopyFileRange(cancel, in)
}

func (s *sessionFS) Ioctl(cancel <-chan struct{}, in *gofuse.IoctlIn, inbuf []byte, out *gofuse.IoctlOut, outbuf []byte) gofuse.Status {
	if st := s.node(&in.InHeader, in.NodeId); !st.Ok() {
		return st
	}
	fh, st := s.handle(&in.InHeader, in.Fh, 0, false)
	if !st.Ok() {
		return st
	}
	in.Fh = fh
	return s.RawFileSystem.Ioctl(cancel, in, inbuf, out, outbuf)
}

func (s *sessionFS) Flush(cancel <-chan struct{}, in *gofuse.FlushIn) gofuse.Status {
	if skip, st := s.syncable(&in.InHeader, in.NodeId, &in.Fh); skip || !st.Ok() {
		return st
	}
	return s.RawFileSystem.Flush(cancel, in)
}

func (s *sessionFS) Fsync(cancel <-chan struct{}, in *gofuse.FsyncIn) gofuse.Status {
	if skip, st := s.syncable(&in.InHeader, in.NodeId, &in.Fh); skip || !st.Ok() {
		return st
	}
	return s.RawFileSystem.Fsync(cancel, in)
}

// syncable maps the handle of a flush or fsync, adopting an inherited
// writer's; skip (with OK) means an inherited reader's: nothing to do.
func (s *sessionFS) syncable(h *gofuse.InHeader, id uint64, fh *uint64) (skip bool, st gofuse.Status) {
	if st := s.node(h, id); !st.Ok() {
		return false, st
	}
	if !s.mine(*fh) && *fh&fhWritable == 0 {
		return true, gofuse.OK
	}
	*fh, st = s.handle(h, *fh, 0, false)
	return false, st
}

func (s *sessionFS) Fallocate(cancel <-chan struct{}, in *gofuse.FallocateIn) gofuse.Status {
	if st := s.node(&in.InHeader, in.NodeId); !st.Ok() {
		return st
	}
	fh, st := s.handle(&in.InHeader, in.Fh, 0, false)
	if !st.Ok() {
		return st
	}
	in.Fh = fh
	return s.RawFileSystem.Fallocate(cancel, in)
}

func (s *sessionFS) OpenDir(cancel <-chan struct{}, in *gofuse.OpenIn, out *gofuse.OpenOut) gofuse.Status {
	if st := s.node(&in.InHeader, in.NodeId); !st.Ok() {
		return st
	}
	st := s.RawFileSystem.OpenDir(cancel, in, out)
	return s.opened(cancel, st, &in.InHeader, in.NodeId, 0, out, false)
}

func (s *sessionFS) ReadDir(cancel <-chan struct{}, in *gofuse.ReadIn, out *gofuse.DirEntryList) gofuse.Status {
	if st := s.dirHandle(cancel, in); !st.Ok() {
		return st
	}
	return s.RawFileSystem.ReadDir(cancel, in, out)
}

func (s *sessionFS) ReadDirPlus(cancel <-chan struct{}, in *gofuse.ReadIn, out *gofuse.DirEntryList) gofuse.Status {
	if st := s.dirHandle(cancel, in); !st.Ok() {
		return st
	}
	st := s.RawFileSystem.ReadDirPlus(cancel, in, out)
	if s.resumed && st.Ok() {
		// Every entry with a node ID is a lookup the kernel will forget.
		if _, entries, err := gofuse.ParseDirLookupEntries(out.Bytes()); err == nil {
			for i := range entries {
				s.entered(gofuse.OK, &entries[i])
			}
		}
	}
	return st
}

func (s *sessionFS) dirHandle(cancel <-chan struct{}, in *gofuse.ReadIn) gofuse.Status {
	if st := s.node(&in.InHeader, in.NodeId); !st.Ok() {
		return st
	}
	fh, st := s.handle(&in.InHeader, in.Fh, in.Flags, true)
	in.Fh = fh
	return st
}

func (s *sessionFS) ReleaseDir(in *gofuse.ReleaseIn) {
	if st := s.node(&in.InHeader, in.NodeId); !st.Ok() {
		return
	}
	if in.Fh = s.release(in.Fh); in.Fh != 0 {
		s.RawFileSystem.ReleaseDir(in)
	}
}

func (s *sessionFS) FsyncDir(cancel <-chan struct{}, in *gofuse.FsyncIn) gofuse.Status {
	if st := s.node(&in.InHeader, in.NodeId); !st.Ok() {
		return st
	}
	if !s.mine(in.Fh) {
		return gofuse.OK // directory changes are in the bucket already
	}
	in.Fh &= fhBridge
	return s.RawFileSystem.FsyncDir(cancel, in)
}

func (s *sessionFS) StatFs(cancel <-chan struct{}, h *gofuse.InHeader, out *gofuse.StatfsOut) gofuse.Status {
	if st := s.node(h, h.NodeId); !st.Ok() {
		return st
	}
	return s.RawFileSystem.StatFs(cancel, h, out)
}

func (s *sessionFS) Statx(cancel <-chan struct{}, in *gofuse.StatxIn, out *gofuse.StatxOut) gofuse.Status {
	if st := s.node(&in.InHeader, in.NodeId); !st.Ok() {
		return st
	}
	if in.GetattrFlags&gofuse.FUSE_GETATTR_FH != 0 && !s.keep(&in.Fh) {
		in.GetattrFlags &^= gofuse.FUSE_GETATTR_FH
	}
	return s.RawFileSystem.Statx(cancel, in, out)
}

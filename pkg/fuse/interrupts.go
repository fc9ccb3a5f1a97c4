package fuse

import gofuse "github.com/hanwen/go-fuse/v2/fuse"

// ignoreInterrupts hands every request to the node bridge without the
// kernel's interrupt, so an operation runs to its end (bounded by the
// operation timeout, fs.go) and its caller gets its true outcome, never
// EINTR. A signal to a thread waiting in a system call on the mount makes
// the kernel send an interrupt; Go's runtime signals its threads all the
// time (preemption), and callers rarely retry EINTR from a stat, mkdir or
// truncate, which a local file system never returns (syscall.Truncate
// does not; the public conformance suite caught it). A change cut short
// by one would also leave the caller unable to tell whether it was made.
// gcsfuse ignores interrupts by default and Mountpoint for S3 does not
// implement them. A process killed while it waits leaves once its
// request is answered, within the operation timeout.
type ignoreInterrupts struct {
	gofuse.RawFileSystem
}

func (u ignoreInterrupts) Lookup(_ <-chan struct{}, header *gofuse.InHeader, name string, out *gofuse.EntryOut) (status gofuse.Status) {
	return u.RawFileSystem.Lookup(nil, header, name, out)
}

func (u ignoreInterrupts) GetAttr(_ <-chan struct{}, input *gofuse.GetAttrIn, out *gofuse.AttrOut) (code gofuse.Status) {
	return u.RawFileSystem.GetAttr(nil, input, out)
}

func (u ignoreInterrupts) SetAttr(_ <-chan struct{}, input *gofuse.SetAttrIn, out *gofuse.AttrOut) (code gofuse.Status) {
	return u.RawFileSystem.SetAttr(nil, input, out)
}

func (u ignoreInterrupts) Mknod(_ <-chan struct{}, input *gofuse.MknodIn, name string, out *gofuse.EntryOut) (code gofuse.Status) {
	return u.RawFileSystem.Mknod(nil, input, name, out)
}

func (u ignoreInterrupts) Mkdir(_ <-chan struct{}, input *gofuse.MkdirIn, name string, out *gofuse.EntryOut) (code gofuse.Status) {
	return u.RawFileSystem.Mkdir(nil, input, name, out)
}

func (u ignoreInterrupts) Unlink(_ <-chan struct{}, header *gofuse.InHeader, name string) (code gofuse.Status) {
	return u.RawFileSystem.Unlink(nil, header, name)
}

func (u ignoreInterrupts) Rmdir(_ <-chan struct{}, header *gofuse.InHeader, name string) (code gofuse.Status) {
	return u.RawFileSystem.Rmdir(nil, header, name)
}

func (u ignoreInterrupts) Rename(_ <-chan struct{}, input *gofuse.RenameIn, oldName string, newName string) (code gofuse.Status) {
	return u.RawFileSystem.Rename(nil, input, oldName, newName)
}

func (u ignoreInterrupts) Link(_ <-chan struct{}, input *gofuse.LinkIn, filename string, out *gofuse.EntryOut) (code gofuse.Status) {
	return u.RawFileSystem.Link(nil, input, filename, out)
}

func (u ignoreInterrupts) Symlink(_ <-chan struct{}, header *gofuse.InHeader, pointedTo string, linkName string, out *gofuse.EntryOut) (code gofuse.Status) {
	return u.RawFileSystem.Symlink(nil, header, pointedTo, linkName, out)
}

func (u ignoreInterrupts) Readlink(_ <-chan struct{}, header *gofuse.InHeader) (out []byte, code gofuse.Status) {
	return u.RawFileSystem.Readlink(nil, header)
}

func (u ignoreInterrupts) Access(_ <-chan struct{}, input *gofuse.AccessIn) (code gofuse.Status) {
	return u.RawFileSystem.Access(nil, input)
}

func (u ignoreInterrupts) GetXAttr(_ <-chan struct{}, header *gofuse.InHeader, attr string, dest []byte) (sz uint32, code gofuse.Status) {
	return u.RawFileSystem.GetXAttr(nil, header, attr, dest)
}

func (u ignoreInterrupts) ListXAttr(_ <-chan struct{}, header *gofuse.InHeader, dest []byte) (uint32, gofuse.Status) {
	return u.RawFileSystem.ListXAttr(nil, header, dest)
}

func (u ignoreInterrupts) SetXAttr(_ <-chan struct{}, input *gofuse.SetXAttrIn, attr string, data []byte) gofuse.Status {
	return u.RawFileSystem.SetXAttr(nil, input, attr, data)
}

func (u ignoreInterrupts) RemoveXAttr(_ <-chan struct{}, header *gofuse.InHeader, attr string) (code gofuse.Status) {
	return u.RawFileSystem.RemoveXAttr(nil, header, attr)
}

func (u ignoreInterrupts) Create(_ <-chan struct{}, input *gofuse.CreateIn, name string, out *gofuse.CreateOut) (code gofuse.Status) {
	return u.RawFileSystem.Create(nil, input, name, out)
}

func (u ignoreInterrupts) Tmpfile(_ <-chan struct{}, input *gofuse.CreateIn, out *gofuse.CreateOut) (code gofuse.Status) {
	return u.RawFileSystem.Tmpfile(nil, input, out)
}

func (u ignoreInterrupts) Open(_ <-chan struct{}, input *gofuse.OpenIn, out *gofuse.OpenOut) (status gofuse.Status) {
	return u.RawFileSystem.Open(nil, input, out)
}

func (u ignoreInterrupts) Read(_ <-chan struct{}, input *gofuse.ReadIn, buf []byte) (gofuse.ReadResult, gofuse.Status) {
	return u.RawFileSystem.Read(nil, input, buf)
}

func (u ignoreInterrupts) Lseek(_ <-chan struct{}, in *gofuse.LseekIn, out *gofuse.LseekOut) gofuse.Status {
	return u.RawFileSystem.Lseek(nil, in, out)
}

func (u ignoreInterrupts) GetLk(_ <-chan struct{}, input *gofuse.LkIn, out *gofuse.LkOut) (code gofuse.Status) {
	return u.RawFileSystem.GetLk(nil, input, out)
}

func (u ignoreInterrupts) SetLk(_ <-chan struct{}, input *gofuse.LkIn) (code gofuse.Status) {
	return u.RawFileSystem.SetLk(nil, input)
}

func (u ignoreInterrupts) SetLkw(_ <-chan struct{}, input *gofuse.LkIn) (code gofuse.Status) {
	return u.RawFileSystem.SetLkw(nil, input)
}

func (u ignoreInterrupts) Write(_ <-chan struct{}, input *gofuse.WriteIn, data []byte) (written uint32, code gofuse.Status) {
	return u.RawFileSystem.Write(nil, input, data)
}

func (u ignoreInterrupts) Writev(_ <-chan struct{}, input *gofuse.WriteIn, data [][]byte) (written uint32, code gofuse.Status) {
	return u.RawFileSystem.Writev(nil, input, data)
}

func (u ignoreInterrupts) CopyFileRange(_ <-chan struct{}, input *gofuse.CopyFileRangeIn) (written uint32, code gofuse.Status) {
	return u.RawFileSystem.CopyFileRange(nil, input)
}

func (u ignoreInterrupts) Ioctl(_ <-chan struct{}, input *gofuse.IoctlIn, inbuf []byte, output *gofuse.IoctlOut, outbuf []byte) (code gofuse.Status) {
	return u.RawFileSystem.Ioctl(nil, input, inbuf, output, outbuf)
}

func (u ignoreInterrupts) Flush(_ <-chan struct{}, input *gofuse.FlushIn) gofuse.Status {
	return u.RawFileSystem.Flush(nil, input)
}

func (u ignoreInterrupts) Fsync(_ <-chan struct{}, input *gofuse.FsyncIn) (code gofuse.Status) {
	return u.RawFileSystem.Fsync(nil, input)
}

func (u ignoreInterrupts) Fallocate(_ <-chan struct{}, input *gofuse.FallocateIn) (code gofuse.Status) {
	return u.RawFileSystem.Fallocate(nil, input)
}

func (u ignoreInterrupts) OpenDir(_ <-chan struct{}, input *gofuse.OpenIn, out *gofuse.OpenOut) (status gofuse.Status) {
	return u.RawFileSystem.OpenDir(nil, input, out)
}

func (u ignoreInterrupts) ReadDir(_ <-chan struct{}, input *gofuse.ReadIn, out *gofuse.DirEntryList) gofuse.Status {
	return u.RawFileSystem.ReadDir(nil, input, out)
}

func (u ignoreInterrupts) ReadDirPlus(_ <-chan struct{}, input *gofuse.ReadIn, out *gofuse.DirEntryList) gofuse.Status {
	return u.RawFileSystem.ReadDirPlus(nil, input, out)
}

func (u ignoreInterrupts) FsyncDir(_ <-chan struct{}, input *gofuse.FsyncIn) (code gofuse.Status) {
	return u.RawFileSystem.FsyncDir(nil, input)
}

func (u ignoreInterrupts) StatFs(_ <-chan struct{}, input *gofuse.InHeader, out *gofuse.StatfsOut) (code gofuse.Status) {
	return u.RawFileSystem.StatFs(nil, input, out)
}

func (u ignoreInterrupts) Statx(_ <-chan struct{}, input *gofuse.StatxIn, out *gofuse.StatxOut) (code gofuse.Status) {
	return u.RawFileSystem.Statx(nil, input, out)
}

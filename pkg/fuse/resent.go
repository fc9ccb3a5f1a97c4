package fuse

import (
	"context"
	"syscall"

	"k8s.io/klog/v2"

	"github.com/basin-csi/basin/pkg/fuse/takeover"
)

// Answering requests the kernel resent after a takeover (see
// pkg/fuse/takeover, resent.go). The takeover layer marks a resent
// UNLINK, RMDIR or RENAME while the node answers it (FS.resending); the
// node turns the failure the predecessor's success causes into success:
// a resent unlink or rmdir that finds nothing (the kernel sent it for a
// name it knew), a resent rename whose source is gone and whose
// destination is in the bucket. So go-fuse's tree of nodes changes as the
// kernel's does.

// resentKey is a resent request under way in the file system, by its
// kind and name (the same name resent in two directories at once would
// only cost a check of the bucket).
type resentKey struct {
	op   takeover.Op
	name string
}

// resending marks a resent request of op on name until done is called.
func (f *FS) resending(op takeover.Op, name string) (done func()) {
	k := resentKey{op, name}
	f.resent.Store(k, struct{}{})
	return func() { f.resent.Delete(k) }
}

// isResent reports whether a resent request of op on name is being
// answered.
func (f *FS) isResent(op takeover.Op, name string) bool {
	_, ok := f.resent.Load(resentKey{op, name})
	return ok
}

// carriedOut turns errno, the file system's answer to op on name, into
// success when the request is a resent one and errno is what the
// predecessor's success causes (ENOENT; EEXIST for a rename that must
// not replace), and done (nil: nothing more to check) confirms it.
func (f *FS) carriedOut(op takeover.Op, name string, errno syscall.Errno, done func() bool) syscall.Errno {
	if errno != syscall.ENOENT && (op != takeover.OpRename || errno != syscall.EEXIST) {
		return errno
	}
	if _, ok := f.resent.Load(resentKey{op, name}); !ok || (done != nil && !done()) {
		return errno
	}
	klog.InfoS("a request resent after the takeover was carried out by the previous process", "volume", f.cfg.VolumeID, "op", op.String(), "name", name, "got", errno)
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

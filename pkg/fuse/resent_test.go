package fuse

import (
	"github.com/basin-csi/basin/pkg/mountspec"
	"syscall"
	"testing"
	"time"

	"github.com/basin-csi/basin/pkg/fuse/takeover"
)

// TestCarriedOut checks which answers of the file system a resent request
// turns into success: ENOENT (and EEXIST for a rename), once the request
// is marked and the check confirms it, and nothing else.
func TestCarriedOut(t *testing.T) {
	f := &FS{}
	yes, no := func() bool { return true }, func() bool { return false }
	if got := f.carriedOut(takeover.OpUnlink, "a", syscall.ENOENT, nil); got != syscall.ENOENT {
		t.Errorf("unmarked unlink: %v, want ENOENT", got)
	}
	done := f.resending(takeover.OpUnlink, "a")
	for _, tc := range []struct {
		op    takeover.Op
		name  string
		errno syscall.Errno
		check func() bool
		want  syscall.Errno
	}{
		{takeover.OpUnlink, "a", syscall.ENOENT, nil, 0},
		{takeover.OpUnlink, "a", syscall.EIO, nil, syscall.EIO},
		{takeover.OpUnlink, "a", syscall.EEXIST, nil, syscall.EEXIST},
		{takeover.OpUnlink, "b", syscall.ENOENT, nil, syscall.ENOENT}, // not marked
		{takeover.OpRmdir, "a", syscall.ENOENT, nil, syscall.ENOENT},  // marked as an unlink
	} {
		if got := f.carriedOut(tc.op, tc.name, tc.errno, tc.check); got != tc.want {
			t.Errorf("%s %s answered %v: %v, want %v", tc.op, tc.name, tc.errno, got, tc.want)
		}
	}
	done()
	if got := f.carriedOut(takeover.OpUnlink, "a", syscall.ENOENT, nil); got != syscall.ENOENT {
		t.Errorf("unlink after the mark ended: %v, want ENOENT", got)
	}
	defer f.resending(takeover.OpRename, "c.tmp")()
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
		if got := f.carriedOut(takeover.OpRename, "c.tmp", tc.errno, tc.check); got != tc.want {
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
	m := mountStore(t, store, mountSpec{cache: realCache, cfg: Config{Spec: mountspec.Spec{MetadataTTL: time.Minute}}})
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

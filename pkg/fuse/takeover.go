package fuse

import (
	"fmt"

	gofuse "github.com/hanwen/go-fuse/v2/fuse"
	"k8s.io/klog/v2"

	"github.com/basin-csi/basin/pkg/fuse/takeover"
)

// The file system's side of the takeover layer (pkg/fuse/takeover): the
// layer wraps go-fuse's node bridge and reaches the file system through
// takeoverHooks; the file system asks it which inodes are pinned to an
// inherited I/O mode (FS.pinned) and which may have a predecessor's open
// files (the staged writes it keeps for adoption).

// takeoverHooks is the file system as the takeover layer calls it.
type takeoverHooks struct{ f *FS }

// Orphaned drops the staged write of ino nobody adopted: the last
// inherited open file of ino is gone without using it.
func (h takeoverHooks) Orphaned(ino uint64) { h.f.writes.drop(ino) }

// Resending marks a resent request for the nodes (resent.go).
func (h takeoverHooks) Resending(op takeover.Op, name string) (done func()) {
	return h.f.resending(op, name)
}

// newServer starts go-fuse on mountpoint behind the takeover layer: fresh
// or, with so.Resume, taking over the connection of the /dev/fd/N
// mountpoint. A mount on a path is never taken over: it records nothing.
func (f *FS) newServer(rawfs gofuse.RawFileSystem, mountpoint string, fdMode bool, mo *gofuse.MountOptions, so takeover.Options) (*gofuse.Server, error) {
	if so.Resume && (!fdMode || so.File == "") {
		return nil, fmt.Errorf("%w: resuming needs a /dev/fd/N mountpoint and a session file", ErrInvalidConfig)
	}
	if !fdMode {
		so.File = ""
	}
	s, err := takeover.Wrap(rawfs, takeoverHooks{f}, so, klog.LoggerWithValues(klog.Background(), "volume", f.cfg.VolumeID))
	if err != nil {
		return nil, err
	}
	f.pinned = s.Pinned
	// Files staged for writers: a resumed session keeps those of inodes
	// its predecessors still had open, for adoption (stagedwrites.go).
	// Acknowledged ones (uploadMode: async) are uploaded (stagedack.go).
	acked, err := f.writes.scan(s.Inherited)
	if err != nil {
		return nil, err
	}
	if len(acked) > 0 && f.cfg.ReadOnly {
		klog.InfoS("files the previous process acknowledged stay staged: the volume is mounted read-only", "volume", f.cfg.VolumeID, "files", len(acked))
	} else {
		f.recover(acked)
	}
	return s.NewServer(mountpoint, mo)
}

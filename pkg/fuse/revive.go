package fuse

import (
	"context"
	"errors"
	"syscall"
	"time"

	"github.com/hanwen/go-fuse/v2/fs"
	gofuse "github.com/hanwen/go-fuse/v2/fuse"

	"github.com/basin-csi/basin/pkg/objstore"
)

// Reviving nodes by number. A process that takes over a live kernel
// connection (see pkg/fuse/takeover) receives requests for node IDs its
// predecessor handed out. Node IDs are the inode numbers of the cache's
// persistent table, so the path is PathOf(id); the node is rebuilt from
// the bucket's (cached) attributes without a parent in go-fuse's tree, and
// remembers its path instead.

var _ fs.NodeLookupNoder = (*dirNode)(nil)

// LookupNode revives node id (called on the root only).
func (d *dirNode) LookupNode(ctx context.Context, id uint64, out *gofuse.EntryOut) (*fs.Inode, syscall.Errno) {
	f := d.fsys
	key, ok := f.cache.PathOf(id)
	if !ok {
		return nil, syscall.ESTALE // numbered but never committed: lost in the crash
	}
	if _, errno := f.settleErrno(ctx, "revive", key); errno != 0 {
		return nil, errno // a file the predecessor acknowledged, not uploaded
	}
	octx, cancel := f.opContext(ctx)
	defer cancel()
	info, err := f.cache.Stat(octx, key)
	if err == nil {
		fn := &fileNode{fsys: f, info: info, revived: key}
		fn.fillAttr(&out.Attr)
		return d.NewInode(ctx, fn, fs.StableAttr{Mode: syscall.S_IFREG, Ino: id}), 0
	}
	if !errors.Is(err, objstore.ErrNotFound) {
		return nil, f.errno("revive", key, err)
	}
	if size, staged := f.writes.size(id); staged {
		// Created by the predecessor and not uploaded yet: its writer
		// goes on with the staged file (stagedwrites.go).
		fn := &fileNode{fsys: f, revived: key}
		f.fillFileAttr(&out.Attr, size, time.Now())
		return d.NewInode(ctx, fn, fs.StableAttr{Mode: syscall.S_IFREG, Ino: id}), 0
	}
	isDir, err := f.dirExists(octx, key)
	if err != nil {
		return nil, f.errno("revive", key, err)
	}
	if !isDir {
		return nil, syscall.ESTALE // gone from the bucket meanwhile
	}
	f.fillDirAttr(&out.Attr)
	return d.NewInode(ctx, &dirNode{fsys: f, revived: key}, fs.StableAttr{Mode: syscall.S_IFDIR, Ino: id}), 0
}

// revivedKey is the path a parentless revived node stands for.
func revivedKey(n *fs.Inode) (string, bool) {
	var key string
	switch ops := n.Operations().(type) {
	case *fileNode:
		key = ops.revived
	case *dirNode:
		key = ops.revived
	}
	return key, key != ""
}

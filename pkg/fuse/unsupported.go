package fuse

import (
	"context"
	"strings"
	"syscall"

	"github.com/hanwen/go-fuse/v2/fs"
	gofuse "github.com/hanwen/go-fuse/v2/fuse"

	"github.com/basin-csi/basin/pkg/objstore"
)

// Objects have one name and hold bytes: hard links and special files do
// not exist in a bucket. Without these methods go-fuse would answer
// EOPNOTSUPP, which callers do not expect (see errno.go).

var (
	_ fs.NodeLinker  = (*dirNode)(nil)
	_ fs.NodeMknoder = (*dirNode)(nil)
)

// Link refuses hard links: EPERM (EROFS on a read-only volume).
func (d *dirNode) Link(_ context.Context, _ fs.InodeEmbedder, _ string, _ *gofuse.EntryOut) (*fs.Inode, syscall.Errno) {
	if d.fsys.cfg.ReadOnly {
		return nil, syscall.EROFS
	}
	return nil, errnoNoHardLinks
}

// Mknod creates an empty regular file (mknod(2) with S_IFREG, as
// open(O_CREAT) would) and refuses every other type with EPERM.
func (d *dirNode) Mknod(ctx context.Context, name string, mode, _ uint32, out *gofuse.EntryOut) (*fs.Inode, syscall.Errno) {
	f := d.fsys
	key, errno := d.newChildKey(name)
	if errno != 0 {
		return nil, errno
	}
	if mode&syscall.S_IFMT != syscall.S_IFREG && mode&syscall.S_IFMT != 0 {
		return nil, errnoNoSpecialFiles
	}
	ctx, cancel := f.opContext(ctx)
	defer cancel()
	if k, err := f.kindOf(ctx, key, false); err != nil {
		return nil, f.errno("mknod", key, err)
	} else if k != kindNone {
		return nil, syscall.EEXIST
	}
	info, err := f.store.Put(ctx, key, strings.NewReader(""), objstore.PutOptions{Size: 0})
	if err != nil {
		return nil, f.errno("mknod", key, err)
	}
	if info.Key == "" {
		info.Key = key
	}
	f.cache.Wrote(info)
	d.forgetListing()
	return d.fileChild(ctx, name, key, info, 0, out)
}

package fuse

import (
	"context"
	"io"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/hanwen/go-fuse/v2/fs"
	gofuse "github.com/hanwen/go-fuse/v2/fuse"

	"github.com/basin-csi/basin/pkg/objstore"
)

// linkNode is a symbolic link: an object whose metadata says so
// (posixmeta.go). Its target is the metadata's (gcsfuse) or else the
// object's body (s3fs, and what Basin writes), read once per version.
// A link in rclone's form (rclonelink.go) is the object NAME.rclonelink.
type linkNode struct {
	fs.Inode
	fsys   *FS
	rclone bool // constant: stored as NAME.rclonelink

	mu sync.Mutex
	// guarded by mu
	info   objstore.ObjectInfo
	attrs  posixAttrs
	target string // "" until read
}

var (
	_ fs.NodeReadlinker = (*linkNode)(nil)
	_ fs.NodeGetattrer  = (*linkNode)(nil)
	_ fs.NodeSymlinker  = (*dirNode)(nil)
)

// Symlink stores the link as one object: the target as its body, with
// mode S_IFLNK|0777 (s3fs) and gcsfuse_symlink_target (gcsfuse); or, on a
// mount of rclone's links, as NAME.rclonelink with the target as its body
// and only the modification time in its metadata.
func (d *dirNode) Symlink(ctx context.Context, target, name string, out *gofuse.EntryOut) (*fs.Inode, syscall.Errno) {
	f := d.fsys
	key, errno := d.newChildKey(name)
	if errno != 0 {
		return nil, errno
	}
	if target == "" || len(target) > symlinkMax {
		return nil, syscall.ENAMETOOLONG
	}
	ctx, cancel := f.changeContext(ctx)
	defer cancel()
	if k, err := f.kindOf(ctx, key, false); err != nil {
		return nil, f.errno("symlink", key, err)
	} else if k != kindNone {
		return nil, syscall.EEXIST
	}
	obj, meta := key, linkMeta(target, time.Now())
	if f.cfg.RcloneLinks {
		obj, meta = key+rcloneLinkSuffix, withMtime(nil, time.Now())
	}
	info, err := f.store.Put(ctx, obj, strings.NewReader(target), objstore.PutOptions{Size: int64(len(target)), Metadata: meta})
	if err != nil {
		return nil, f.errno("symlink", obj, err)
	}
	if info.Key == "" {
		info.Key = obj
	}
	info.Metadata = meta
	f.cache.Wrote(info)
	d.forgetListing()
	ino, errno := f.inodeOf(key, 0)
	if errno != 0 {
		return nil, errno
	}
	ln := &linkNode{fsys: f, rclone: f.cfg.RcloneLinks, info: info, attrs: parsePosix(meta), target: target}
	ln.fillAttr(&out.Attr)
	return d.NewInode(ctx, ln, fs.StableAttr{Mode: syscall.S_IFLNK, Ino: ino}), 0
}

// linkChild returns the inode of a link child with fresh attributes;
// rclone: stored in rclone's form.
func (d *dirNode) linkChild(ctx context.Context, name string, info objstore.ObjectInfo, a posixAttrs, ino uint64, rclone bool, out *gofuse.EntryOut) (*fs.Inode, syscall.Errno) {
	if ch := d.GetChild(name); ch != nil {
		if ln, ok := ch.Operations().(*linkNode); ok && ln.rclone == rclone {
			ln.mu.Lock()
			if ln.info.Version != info.Version {
				ln.target = ""
			}
			ln.info, ln.attrs = info, a
			ln.mu.Unlock()
			ln.fillAttr(&out.Attr)
			return ch, 0
		}
	}
	ln := &linkNode{fsys: d.fsys, rclone: rclone, info: info, attrs: a}
	ln.fillAttr(&out.Attr)
	return d.NewInode(ctx, ln, fs.StableAttr{Mode: syscall.S_IFLNK, Ino: ino}), 0
}

func (l *linkNode) fillAttr(out *gofuse.Attr) {
	l.mu.Lock()
	info, a, target := l.info, l.attrs, l.target
	l.mu.Unlock()
	size := info.Size
	if target != "" {
		size = int64(len(target))
	} else if a.target != "" {
		size = int64(len(a.target))
	}
	l.fsys.fillFileAttr(out, size, info.ModTime)
	out.Mode = syscall.S_IFLNK | 0o777
	if !a.mtime.IsZero() {
		out.SetTimes(nil, &a.mtime, &a.mtime)
	}
}

// Getattr answers from what the lookup found.
func (l *linkNode) Getattr(_ context.Context, _ fs.FileHandle, out *gofuse.AttrOut) syscall.Errno {
	l.fillAttr(&out.Attr)
	return 0
}

// Readlink returns the target: from the metadata, else the body.
func (l *linkNode) Readlink(ctx context.Context) ([]byte, syscall.Errno) {
	l.mu.Lock()
	info, a, target := l.info, l.attrs, l.target
	l.mu.Unlock()
	if target != "" {
		return []byte(target), 0
	}
	if a.target != "" {
		return []byte(a.target), 0
	}
	key, ok := l.fsys.keyOf(l.EmbeddedInode())
	if !ok {
		return nil, syscall.ENOENT
	}
	if l.rclone {
		key += rcloneLinkSuffix
	}
	if info.Size > symlinkMax {
		return nil, syscall.EIO // not a link body
	}
	ctx, cancel := l.fsys.opContext(ctx)
	defer cancel()
	body, _, err := l.fsys.store.Read(ctx, key, objstore.ReadOptions{Length: -1, IfVersion: info.Version})
	if err != nil {
		return nil, l.fsys.errno("readlink", key, err)
	}
	defer func() { _ = body.Close() }()
	raw, err := io.ReadAll(io.LimitReader(body, symlinkMax+1))
	if err != nil {
		return nil, l.fsys.errno("readlink", key, err)
	}
	l.mu.Lock()
	if l.info.Version == info.Version {
		l.target = string(raw)
	}
	l.mu.Unlock()
	return raw, 0
}

// movedTo makes the copy info a renamed link's object.
func (l *linkNode) movedTo(info objstore.ObjectInfo) {
	l.mu.Lock()
	l.info = info
	l.mu.Unlock()
}

package fuse

import (
	"context"
	"errors"
	"strings"
	"syscall"

	"github.com/hanwen/go-fuse/v2/fs"
	gofuse "github.com/hanwen/go-fuse/v2/fuse"

	"github.com/basin-csi/basin/pkg/objstore"
)

// With the mount's RcloneLinks setting, a symbolic link is stored as
// rclone's --links (-l) stores one: the object NAME.rclonelink, whose
// body is the target, is the link NAME. Such an object is never shown
// under its own name; a plain object NAME wins over it, and it wins over
// a directory NAME (as any object does). Links made here are stored so,
// with the modification time in the metadata and no mode, so that a mount
// without the setting sees the regular file rclone would see.
const rcloneLinkSuffix = ".rclonelink"

// rcloneLinkName returns the link name an object name stands for: NAME
// for NAME.rclonelink when the mount reads rclone's links.
func (f *FS) rcloneLinkName(objName string) (string, bool) {
	if !f.cfg.RcloneLinks {
		return "", false
	}
	name, ok := strings.CutSuffix(objName, rcloneLinkSuffix)
	return name, ok && validName(name)
}

// hiddenName reports whether name is a link's object in rclone's form,
// which is not a file name of its own.
func (f *FS) hiddenName(name string) bool {
	_, ok := f.rcloneLinkName(name)
	return ok
}

// rcloneLinkInfo returns the object of the link key in rclone's form:
// ErrNotFound when the mount does not read them or there is none.
func (f *FS) rcloneLinkInfo(ctx context.Context, key string, stat func(context.Context, string) (objstore.ObjectInfo, error)) (objstore.ObjectInfo, error) {
	if !f.cfg.RcloneLinks {
		return objstore.ObjectInfo{}, objstore.ErrNotFound
	}
	return stat(ctx, key+rcloneLinkSuffix)
}

// rcloneLinkChild returns the inode of the link name stored in rclone's
// form as the object info.
func (d *dirNode) rcloneLinkChild(ctx context.Context, name, key string, info objstore.ObjectInfo, ino uint64, out *gofuse.EntryOut) (*fs.Inode, syscall.Errno) {
	ino, errno := d.fsys.inodeOf(key, ino)
	if errno != 0 {
		return nil, errno
	}
	a := parsePosix(info.Metadata)
	a.mode, a.target = syscall.S_IFLNK|0o777, "" // the body is the target
	return d.linkChild(ctx, name, info, a, ino, true, out)
}

// objectKeyOf returns the object that holds child name (key its path) of
// d: NAME.rclonelink for a link in rclone's form, else key.
func (d *dirNode) objectKeyOf(ctx context.Context, name, key string) string {
	if !d.fsys.cfg.RcloneLinks {
		return key
	}
	if ch := d.GetChild(name); ch != nil {
		if ln, ok := ch.Operations().(*linkNode); ok && ln.rclone {
			return key + rcloneLinkSuffix
		}
		return key
	}
	// Not known to the kernel: ask as a lookup would.
	if _, err := d.fsys.cache.Stat(ctx, key); !errors.Is(err, objstore.ErrNotFound) {
		return key
	}
	if _, err := d.fsys.cache.Stat(ctx, key+rcloneLinkSuffix); err == nil {
		return key + rcloneLinkSuffix
	}
	return key
}

// otherForm returns the object that would shadow or be shadowed by obj,
// the object of path key: the rclone form of a plain object and the other
// way round ("" when the mount does not read rclone's links). A rename
// over a path removes it, so that the name shows what was renamed.
func (f *FS) otherForm(key, obj string) string {
	switch {
	case !f.cfg.RcloneLinks:
		return ""
	case obj == key:
		return key + rcloneLinkSuffix
	default:
		return key
	}
}

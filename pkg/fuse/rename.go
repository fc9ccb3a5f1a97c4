package fuse

import (
	"context"
	"errors"
	"strings"
	"syscall"

	"github.com/hanwen/go-fuse/v2/fs"
	"golang.org/x/sys/unix"
	"k8s.io/klog/v2"

	"github.com/basin-csi/basin/pkg/fuse/takeover"
	"github.com/basin-csi/basin/pkg/objstore"
)

// Rename copies then deletes; see the package documentation for what is
// not atomic. A resent rename the predecessor carried out succeeds
// (resent.go).
func (d *dirNode) Rename(ctx context.Context, name string, newParent fs.InodeEmbedder, newName string, flags uint32) syscall.Errno {
	errno := d.rename(ctx, name, newParent, newName, flags)
	return d.fsys.carriedOut(takeover.OpRename, name, errno, func() bool {
		np, ok := newParent.(*dirNode)
		if !ok {
			return false
		}
		srcDir, ok1 := d.key()
		dstDir, ok2 := np.key()
		return ok1 && ok2 && d.fsys.renameDone(childKey(srcDir, name), childKey(dstDir, newName))
	})
}

func (d *dirNode) rename(ctx context.Context, name string, newParent fs.InodeEmbedder, newName string, flags uint32) syscall.Errno {
	f := d.fsys
	if f.cfg.ReadOnly {
		return syscall.EROFS
	}
	if flags&^uint32(unix.RENAME_NOREPLACE) != 0 {
		return errnoNoRenameFlag // RENAME_EXCHANGE, RENAME_WHITEOUT
	}
	np, ok := newParent.(*dirNode)
	if !ok || !validName(newName) || f.hiddenName(newName) {
		return syscall.EINVAL
	}
	srcDir, ok1 := d.key()
	dstDir, ok2 := np.key()
	if !ok1 || !ok2 {
		return syscall.ENOENT
	}
	src, dst := childKey(srcDir, name), childKey(dstDir, newName)
	if src == dst {
		return 0
	}
	for _, key := range []string{src, dst} {
		if _, errno := f.settleErrno(ctx, "rename", key); errno != 0 {
			return errno // an acknowledged file no node answers for comes first (settle.go)
		}
	}
	ctx, cancel := f.changeContext(ctx)
	defer cancel()
	srcIsDir, errno := d.childIsDir(ctx, name, src)
	if errno != 0 {
		return errno
	}
	dstKind, err := f.kindOf(ctx, dst, false)
	if err != nil {
		return f.errno("rename", dst, err)
	}
	switch {
	case dstKind != kindNone && flags&unix.RENAME_NOREPLACE != 0:
		return syscall.EEXIST
	case srcIsDir && dstKind == kindFile:
		return syscall.ENOTDIR
	case !srcIsDir && dstKind == kindDir:
		return syscall.EISDIR
	case srcIsDir && strings.HasPrefix(dst+"/", src+"/"):
		return syscall.EINVAL // into itself
	}
	if srcIsDir {
		errno = d.renameDir(ctx, name, src, dst, dstKind == kindDir)
	} else {
		errno = d.renameLinkOrFile(ctx, name, src, dst, dstKind != kindNone)
	}
	if errno == 0 {
		d.forgetListing()
		np.forgetListing()
		// The moved nodes keep their numbers under the new names.
		f.moveInodes(src, dst)
	}
	return errno
}

// childIsDir tells whether the child name is a directory.
func (d *dirNode) childIsDir(ctx context.Context, name, key string) (bool, syscall.Errno) {
	if ch := d.GetChild(name); ch != nil {
		return ch.IsDir(), 0
	}
	k, err := d.fsys.kindOf(ctx, key, false)
	if err != nil {
		return false, d.fsys.errno("rename", key, err)
	}
	if k == kindNone {
		return false, syscall.ENOENT
	}
	return k == kindDir, 0
}

type kind int

const (
	kindNone kind = iota
	kindFile
	kindDir
)

// kindOf looks key up as Lookup does (a link in rclone's form is a
// file), through the cache's metadata, or, with fresh, in the bucket
// itself.
func (f *FS) kindOf(ctx context.Context, key string, fresh bool) (kind, error) {
	stat, dirExists := f.cache.Stat, f.dirExists
	if fresh {
		stat, dirExists = f.store.Stat, f.dirListed
	}
	_, err := stat(ctx, key)
	if errors.Is(err, objstore.ErrNotFound) {
		_, err = f.rcloneLinkInfo(ctx, key, stat)
	}
	if err == nil {
		return kindFile, nil
	}
	if !errors.Is(err, objstore.ErrNotFound) {
		return kindNone, err
	}
	isDir, err := dirExists(ctx, key)
	if err != nil || !isDir {
		return kindNone, err
	}
	return kindDir, nil
}

// moveInodes gives the inode numbers of src and the paths below it to
// dst, after a rename.
func (f *FS) moveInodes(src, dst string) {
	if err := f.cache.RenameInodes(src, dst); err != nil {
		klog.ErrorS(err, "renaming inode numbers; a takeover may not resolve the moved files", "volume", f.cfg.VolumeID, "from", src, "to", dst)
	}
}

// renameLinkOrFile renames the object of src, which is NAME.rclonelink
// for a link in rclone's form (rclonelink.go), to dst's name of the same
// form; when dst existed, it then deletes dst's object of the other form,
// which would shadow the moved one or survive it.
func (d *dirNode) renameLinkOrFile(ctx context.Context, name, src, dst string, dstExists bool) syscall.Errno {
	f := d.fsys
	srcObj, dstObj := d.objectKeyOf(ctx, name, src), dst
	if srcObj != src {
		dstObj = dst + rcloneLinkSuffix
	}
	if errno := d.renameFile(ctx, name, srcObj, dstObj); errno != 0 {
		return errno
	}
	if other := f.otherForm(dst, dstObj); dstExists && other != "" {
		if err := f.store.Delete(ctx, other); err != nil {
			return f.errno("rename", other, err)
		}
		f.cache.Removed(other, false)
	}
	return 0
}

// renameFile uploads pending data, then copies and deletes the object.
func (d *dirNode) renameFile(ctx context.Context, name, src, dst string) syscall.Errno {
	f := d.fsys
	var w, finishing *writeState
	var node *fileNode
	if ch := d.GetChild(name); ch != nil {
		if fn, ok := ch.Operations().(*fileNode); ok {
			node = fn
			w, finishing = fn.writeStates()
		}
	}
	for _, w := range []*writeState{w, finishing} {
		if w == nil {
			continue
		}
		// A pending upload after close too (uploadMode: async): the
		// copy below then moves the written content.
		if err := w.upload(ctx); err != nil {
			return f.errno("rename", src, err)
		}
		// Its finish must not install the old name's object.
		w.forgetUploaded()
	}
	if finishing != nil {
		// Its install into the cache under the old name must not follow
		// the rename (it comes before, or not at all).
		finishing.markUnlinked()
	}
	info, err := f.store.Copy(ctx, src, dst)
	if err != nil {
		return f.errno("rename", src, err)
	}
	if err := f.store.Delete(ctx, src); err != nil {
		return f.errno("rename", src, err)
	}
	f.cache.Removed(src, false)
	if info.Key != dst {
		f.cache.Invalidate(dst)
		return 0
	}
	f.cache.Wrote(info)
	if node != nil {
		node.movedTo(info)
	} else if ch := d.GetChild(name); ch != nil {
		if ln, ok := ch.Operations().(*linkNode); ok {
			ln.movedTo(info)
		}
	}
	return 0
}

// renameDir copies every key under src/ to dst/, then deletes the sources.
// Each request gets the op timeout; the whole walk is not bounded.
func (d *dirNode) renameDir(ctx context.Context, name, src, dst string, dstExists bool) syscall.Errno {
	f := d.fsys
	for _, dir := range []string{src, dst} {
		if errno := f.settlePrefixErrno(ctx, "rename", dir); errno != 0 {
			return errno // acknowledged files no node answers for go first
		}
	}
	if ch := d.GetChild(name); ch != nil {
		if err := uploadPendingUnder(ctx, ch); err != nil {
			return f.errno("rename", src, err)
		}
		if stillWriting(ctx, ch) {
			return syscall.EBUSY
		}
	}
	if dstExists {
		page, err := f.store.List(ctx, objstore.ListOptions{Prefix: dst + "/", MaxKeys: 2})
		if err != nil {
			return f.errno("rename", dst, err)
		}
		for _, o := range page.Objects {
			if o.Key != dst+"/" {
				return syscall.ENOTEMPTY
			}
		}
	}
	// The walk may outlive one op timeout; each request is bounded.
	walkCtx := context.WithoutCancel(ctx)
	var keys []string
	err := objstore.ListAll(walkCtx, f.store, objstore.ListOptions{Prefix: src + "/"}, func(p objstore.ListPage) error {
		for _, o := range p.Objects {
			keys = append(keys, o.Key)
		}
		return nil
	})
	if err != nil {
		return f.errno("rename", src, err)
	}
	copied := make(map[string]objstore.ObjectInfo, len(keys)) // by path below the directory
	for _, k := range keys {
		rel := strings.TrimPrefix(k, src+"/")
		rctx, cancel := f.opContext(walkCtx)
		info, err := f.store.Copy(rctx, k, dst+"/"+rel)
		cancel()
		if err != nil {
			return f.errno("rename", k, err)
		}
		copied[rel] = info
	}
	for _, k := range keys {
		rctx, cancel := f.opContext(walkCtx)
		err := f.store.Delete(rctx, k)
		cancel()
		if err != nil {
			return f.errno("rename", k, err)
		}
		f.cache.Invalidate(k)
		f.cache.Invalidate(dst + "/" + strings.TrimPrefix(k, src+"/"))
	}
	f.cache.Removed(src, true)
	f.cache.Invalidate(dst)
	if ch := d.GetChild(name); ch != nil {
		movedVersions(ch, "", copied)
	}
	return 0
}

// movedVersions gives the file nodes below n, a directory moved by a
// rename, the versions of their copies (infos, by path below n): the
// nodes move with the names, and their next open pins the copy, not the
// source version they knew.
func movedVersions(n *fs.Inode, rel string, infos map[string]objstore.ObjectInfo) {
	for name, ch := range n.Children() {
		p := childKey(rel, name)
		if fn, ok := ch.Operations().(*fileNode); ok {
			if info, ok := infos[p]; ok {
				fn.movedTo(info)
			}
			continue
		}
		movedVersions(ch, p, infos)
	}
}

// movedTo makes the copy info a renamed file's object.
func (n *fileNode) movedTo(info objstore.ObjectInfo) {
	n.mu.Lock()
	if n.info.Key != "" {
		n.info = info
	}
	n.mu.Unlock()
}

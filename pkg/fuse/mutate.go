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

// Create opens a new file for writing; it reaches the bucket at close.
func (d *dirNode) Create(ctx context.Context, name string, flags, _ uint32, out *gofuse.EntryOut) (*fs.Inode, fs.FileHandle, uint32, syscall.Errno) {
	f := d.fsys
	key, errno := d.newChildKey(name)
	if errno != 0 {
		return nil, nil, 0, errno
	}
	// CREATE follows a negative lookup, which may be stale (kernel and
	// cache trust "missing" for NegativeTTL). Without O_TRUNC or O_EXCL an
	// existing object's content must survive (copy-down on the first
	// write, as for an open): ask the bucket itself. With O_EXCL (cp, tar,
	// mkstemp) the mount's own knowledge answers within the TTLs' promise —
	// a fresh listing, a negative entry, a directory it made — so a new
	// file costs its upload only; an object another writer created
	// meanwhile is replaced (last upload wins), and O_EXCL is exclusive
	// against what this mount knows, not a lock across nodes.
	var existing *objstore.ObjectInfo
	if flags&(syscall.O_EXCL|syscall.O_TRUNC) != syscall.O_TRUNC {
		stat := f.store.Stat
		if flags&syscall.O_EXCL != 0 {
			stat = f.cache.Stat
		}
		sctx, cancel := f.opContext(ctx)
		info, err := stat(sctx, key)
		cancel()
		switch {
		case err == nil && flags&syscall.O_EXCL != 0:
			return nil, nil, 0, syscall.EEXIST
		case err == nil:
			existing = &info
			f.cache.Invalidate(key)
		case !errors.Is(err, objstore.ErrNotFound):
			return nil, nil, 0, f.errno("create", key, err)
		}
	}
	ino, err := f.cache.InodeOf(key)
	if err != nil {
		return nil, nil, 0, f.errno("create", key, err)
	}
	var w *writeState
	if existing != nil {
		w = newWriteState(nil, ino, *existing)
	} else if w, err = newCreatedState(f, ino); err != nil {
		return nil, nil, 0, f.errno("create", key, err)
	}
	fn := &fileNode{fsys: f, w: w, userOpens: 1}
	if existing != nil {
		fn.info = *existing
	}
	w.node = fn
	w.refs = 1
	w.writers.Store(1)
	fn.fillAttr(&out.Attr)
	child := d.NewInode(ctx, fn, fs.StableAttr{Mode: syscall.S_IFREG, Ino: ino})
	d.forgetListing()
	h := &writeHandle{node: fn, w: w, writable: true, readable: flags&syscall.O_ACCMODE == syscall.O_RDWR}
	return child, h, 0, 0
}

// Mkdir writes the marker object "name/".
func (d *dirNode) Mkdir(ctx context.Context, name string, _ uint32, out *gofuse.EntryOut) (*fs.Inode, syscall.Errno) {
	f := d.fsys
	key, errno := d.newChildKey(name)
	if errno != 0 {
		return nil, errno
	}
	ctx, cancel := f.opContext(ctx)
	defer cancel()
	if _, err := f.store.Put(ctx, key+"/", strings.NewReader(""), objstore.PutOptions{Size: 0}); err != nil {
		return nil, f.errno("mkdir", key, err)
	}
	f.cache.MadeDir(key) // an empty listing: lookups in it need no request
	d.forgetListing()
	return d.dirChild(ctx, name, key, 0, out)
}

// Rmdir deletes the marker of an empty directory; a resent rmdir the
// predecessor carried out succeeds (resent.go).
func (d *dirNode) Rmdir(ctx context.Context, name string) syscall.Errno {
	return d.fsys.carriedOut(resentRmdir, name, d.rmdir(ctx, name), nil)
}

func (d *dirNode) rmdir(ctx context.Context, name string) syscall.Errno {
	f := d.fsys
	key, errno := d.childKeyToChange(name)
	if errno != 0 {
		return errno
	}
	if ch := d.GetChild(name); ch != nil && hasPendingWrites(ch) {
		return syscall.ENOTEMPTY
	}
	ctx, cancel := f.opContext(ctx)
	defer cancel()
	page, err := f.store.List(ctx, objstore.ListOptions{Prefix: key + "/", Delimiter: "/", MaxKeys: 2})
	if err != nil {
		return f.errno("rmdir", key, err)
	}
	for _, o := range page.Objects {
		if o.Key != key+"/" {
			return syscall.ENOTEMPTY
		}
	}
	if len(page.CommonPrefixes) > 0 {
		return syscall.ENOTEMPTY
	}
	if err := f.store.Delete(ctx, key+"/"); err != nil {
		return f.errno("rmdir", key, err)
	}
	f.cache.Invalidate(key)
	d.forgetListing()
	return 0
}

// hasPendingWrites reports whether a file under n is being written.
func hasPendingWrites(n *fs.Inode) bool {
	if fn, ok := n.Operations().(*fileNode); ok {
		return fn.pendingWrite()
	}
	for _, ch := range n.Children() {
		if hasPendingWrites(ch) {
			return true
		}
	}
	return false
}

// Unlink deletes the object; a file still being written here is not
// uploaded afterwards. A resent unlink the predecessor carried out
// succeeds (resent.go).
func (d *dirNode) Unlink(ctx context.Context, name string) syscall.Errno {
	return d.fsys.carriedOut(resentUnlink, name, d.unlink(ctx, name), nil)
}

func (d *dirNode) unlink(ctx context.Context, name string) syscall.Errno {
	f := d.fsys
	key, errno := d.childKeyToChange(name)
	if errno != 0 {
		return errno
	}
	if ch := d.GetChild(name); ch != nil {
		if fn, ok := ch.Operations().(*fileNode); ok {
			fn.unlinked()
		}
	}
	ctx, cancel := f.opContext(ctx)
	defer cancel()
	if err := f.store.Delete(ctx, key); err != nil {
		return f.errno("unlink", key, err)
	}
	f.cache.Invalidate(key)
	d.forgetListing()
	return 0
}

// unlinked detaches the node from its object: pending data is discarded
// and open handles keep what they have.
func (n *fileNode) unlinked() {
	n.mu.Lock()
	w := n.w
	n.info.Key = ""
	n.mu.Unlock()
	if w != nil {
		w.markUnlinked()
	}
}

// childKeyToChange is the key of child name of d for a mutation: EROFS on a
// read-only volume, ENOENT when d itself is gone.
func (d *dirNode) childKeyToChange(name string) (string, syscall.Errno) {
	if d.fsys.cfg.ReadOnly {
		return "", syscall.EROFS
	}
	dir, ok := d.key()
	if !ok {
		return "", syscall.ENOENT
	}
	return childKey(dir, name), 0
}

// newChildKey is childKeyToChange for a name about to be created, which
// must also be a valid file name (EINVAL).
func (d *dirNode) newChildKey(name string) (string, syscall.Errno) {
	if d.fsys.cfg.ReadOnly {
		return "", syscall.EROFS
	}
	if !validName(name) {
		return "", syscall.EINVAL
	}
	return d.childKeyToChange(name)
}

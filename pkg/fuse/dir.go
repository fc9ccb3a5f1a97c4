package fuse

import (
	"context"
	"errors"
	"sync"
	"syscall"
	"time"

	"github.com/hanwen/go-fuse/v2/fs"
	gofuse "github.com/hanwen/go-fuse/v2/fuse"

	"github.com/basin-csi/basin/pkg/objstore"
)

// dirNode is a directory: the root, a common prefix or a marker object.
type dirNode struct {
	fs.Inode
	fsys    *FS
	revived string // constant: the path of a node revived by number, else ""

	mu sync.Mutex
	// guarded by mu: FetchedAt of the listing last handed to the kernel's
	// readdir cache; an unchanged listing lets the kernel keep it.
	listedAt time.Time
}

var (
	_ fs.NodeLookuper       = (*dirNode)(nil)
	_ fs.NodeGetattrer      = (*dirNode)(nil)
	_ fs.NodeSetattrer      = (*dirNode)(nil)
	_ fs.NodeOpendirHandler = (*dirNode)(nil)
	_ fs.NodeStatfser       = (*dirNode)(nil)
	_ fs.NodeCreater        = (*dirNode)(nil)
	_ fs.NodeMkdirer        = (*dirNode)(nil)
	_ fs.NodeRmdirer        = (*dirNode)(nil)
	_ fs.NodeUnlinker       = (*dirNode)(nil)
	_ fs.NodeRenamer        = (*dirNode)(nil)
	_ fs.NodeOnForgetter    = (*dirNode)(nil)
)

func (d *dirNode) key() (string, bool) { return d.fsys.keyOf(d.EmbeddedInode()) }

// OnForget is called when the kernel forgot the directory.
func (d *dirNode) OnForget() {}

func (d *dirNode) Getattr(_ context.Context, _ fs.FileHandle, out *gofuse.AttrOut) syscall.Errno {
	d.fsys.fillDirAttr(&out.Attr)
	return 0
}

// Setattr accepts and ignores mode, owner and time changes.
func (d *dirNode) Setattr(_ context.Context, _ fs.FileHandle, _ *gofuse.SetAttrIn, out *gofuse.AttrOut) syscall.Errno {
	if d.fsys.cfg.ReadOnly {
		return syscall.EROFS
	}
	d.fsys.fillDirAttr(&out.Attr)
	return 0
}

func (d *dirNode) Statfs(_ context.Context, out *gofuse.StatfsOut) syscall.Errno {
	d.fsys.statfs(out)
	return 0
}

// Lookup resolves name: a file being written here, else an object, else a
// link in rclone's form (rclonelink.go), else a directory (a prefix with at least one key under it, or a marker object).
func (d *dirNode) Lookup(ctx context.Context, name string, out *gofuse.EntryOut) (*fs.Inode, syscall.Errno) {
	if !validName(name) || d.fsys.hiddenName(name) {
		return nil, syscall.ENOENT
	}
	dir, ok := d.key()
	if !ok {
		return nil, syscall.ENOENT
	}
	key := childKey(dir, name)
	if ch := d.GetChild(name); ch != nil {
		if fn, ok := ch.Operations().(*fileNode); ok && fn.pendingWrite() {
			fn.fillAttr(&out.Attr)
			return ch, 0
		}
	}
	// An acknowledged file no node answers for (a predecessor's, or one
	// whose inode the kernel forgot; settle.go) goes to the bucket first.
	if _, errno := d.fsys.settleErrno(ctx, "lookup", key); errno != 0 {
		return nil, errno
	}
	ctx, cancel := d.fsys.opContext(ctx)
	defer cancel()
	// Readers open many files of a directory by name: one listing page
	// answers them instead of a HEAD each (a failure leaves it to Stat).
	_ = d.fsys.cache.Prime(ctx, dirPrefix(dir))
	info, err := d.fsys.cache.Stat(ctx, key)
	if err == nil {
		return d.fileChild(ctx, name, key, info, 0, out)
	}
	if !errors.Is(err, objstore.ErrNotFound) {
		return nil, d.fsys.errno("lookup", key, err)
	}
	info, err = d.fsys.rcloneLinkInfo(ctx, key, d.fsys.cache.Stat)
	if err == nil {
		return d.rcloneLinkChild(ctx, name, key, info, 0, out)
	}
	if !errors.Is(err, objstore.ErrNotFound) {
		return nil, d.fsys.errno("lookup", key+rcloneLinkSuffix, err)
	}
	isDir, err := d.fsys.dirExists(ctx, key)
	if err != nil {
		return nil, d.fsys.errno("lookup", key, err)
	}
	if !isDir {
		return nil, syscall.ENOENT
	}
	return d.dirChild(ctx, name, key, 0, out)
}

// dirExists reports whether any key, including a marker, starts with
// key+"/": from fresh cached listings when they tell (a warmed tree needs
// no bucket), else with a one-key listing.
func (f *FS) dirExists(ctx context.Context, key string) (bool, error) {
	if isDir, known := f.cache.KnownDir(key); known {
		return isDir, nil
	}
	return f.dirListed(ctx, key)
}

// dirListed reports whether the bucket lists any key under key+"/".
func (f *FS) dirListed(ctx context.Context, key string) (bool, error) {
	page, err := f.store.List(ctx, objstore.ListOptions{Prefix: key + "/", Delimiter: "/", MaxKeys: 1})
	if err != nil {
		return false, err
	}
	return len(page.Objects)+len(page.CommonPrefixes) > 0, nil
}

// inodeOf returns ino if known (non-zero), else the cache's number for key.
func (f *FS) inodeOf(key string, ino uint64) (uint64, syscall.Errno) {
	if ino != 0 {
		return ino, 0
	}
	ino, err := f.cache.InodeOf(key)
	if err != nil {
		return 0, f.errno("inode", key, err)
	}
	return ino, 0
}

// fileChild returns the inode of an object child — a file, or a symbolic
// link when its metadata says so (posixmeta.go) — with fresh attributes,
// reusing the known inode if there is one. ino 0 means "look it up".
func (d *dirNode) fileChild(ctx context.Context, name, key string, info objstore.ObjectInfo, ino uint64, out *gofuse.EntryOut) (*fs.Inode, syscall.Errno) {
	ino, errno := d.fsys.inodeOf(key, ino)
	if errno != 0 {
		return nil, errno
	}
	// A listing's entry of an acknowledged file no node answers for: upload it
	// first, then take the new object's attributes.
	if settled, errno := d.fsys.settleErrno(ctx, "lookup", key); errno != 0 {
		return nil, errno
	} else if settled {
		fresh, err := d.fsys.cache.Stat(ctx, key)
		if err != nil {
			return nil, d.fsys.errno("lookup", key, err)
		}
		info = fresh
	}
	meta, known := d.fsys.objectMeta(ctx, info)
	if a := parsePosix(meta); a.isLink() {
		return d.linkChild(ctx, name, info, a, ino, false, out)
	}
	// A known child of the same type keeps its inode (and number), also
	// after a rename moved it here: the kernel already knows it.
	if ch := d.GetChild(name); ch != nil {
		if fn, ok := ch.Operations().(*fileNode); ok {
			fn.setInfo(info)
			fn.setMeta(meta, known)
			fn.fillAttr(&out.Attr)
			return ch, 0
		}
	}
	fn := &fileNode{fsys: d.fsys, info: info, meta: meta}
	fn.fillAttr(&out.Attr)
	return d.NewInode(ctx, fn, fs.StableAttr{Mode: syscall.S_IFREG, Ino: ino}), 0
}

// dirChild returns the inode of a directory child.
func (d *dirNode) dirChild(ctx context.Context, name, key string, ino uint64, out *gofuse.EntryOut) (*fs.Inode, syscall.Errno) {
	ino, errno := d.fsys.inodeOf(key, ino)
	if errno != 0 {
		return nil, errno
	}
	d.fsys.fillDirAttr(&out.Attr)
	if ch := d.GetChild(name); ch != nil {
		if _, ok := ch.Operations().(*dirNode); ok {
			return ch, 0
		}
	}
	return d.NewInode(ctx, &dirNode{fsys: d.fsys}, fs.StableAttr{Mode: syscall.S_IFDIR, Ino: ino}), 0
}

// OpendirHandle lists the directory (from the cache while fresh) so errors
// of the listing surface at opendir, and lets the kernel keep its readdir
// cache while the listing is unchanged. The entries' inode numbers and
// link marks wait for the first READDIR (dirHandle.resolve), which a
// kernel serving its own cache never sends.
//
// go-fuse answers FOPEN_CACHE_DIR with FOPEN_KEEP_CACHE too, and the
// kernel resets its readdir cache on its own only when the directory
// changed through this mount: a listing that changed in the bucket (the
// TTL passed, another writer added a name) drops the kernel's cache by an
// inode notification, sent before this open returns.
func (d *dirNode) OpendirHandle(ctx context.Context, _ uint32) (fs.FileHandle, uint32, syscall.Errno) {
	dir, ok := d.key()
	if !ok {
		return nil, 0, syscall.ENOENT
	}
	h := &dirHandle{dir: d, key: dir}
	fetchedAt, errno := h.load(ctx)
	if errno != 0 {
		return nil, 0, errno
	}
	var flags uint32
	keep := false
	d.mu.Lock()
	if !h.pending && !fetchedAt.IsZero() {
		flags = gofuse.FOPEN_CACHE_DIR
		keep = fetchedAt.Equal(d.listedAt)
		d.listedAt = fetchedAt
	} else {
		d.listedAt = time.Time{}
	}
	d.mu.Unlock()
	if keep {
		flags |= gofuse.FOPEN_KEEP_CACHE
	} else {
		_ = d.NotifyContent(0, 0) // ENOENT if the kernel holds nothing of it
	}
	return h, flags, 0
}

// forgetListing makes the next opendir drop the kernel's readdir cache.
func (d *dirNode) forgetListing() {
	d.mu.Lock()
	d.listedAt = time.Time{}
	d.mu.Unlock()
}

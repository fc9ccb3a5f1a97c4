package fuse

import (
	"context"
	"errors"
	"strings"
	"syscall"
	"time"

	"github.com/hanwen/go-fuse/v2/fs"
	gofuse "github.com/hanwen/go-fuse/v2/fuse"

	"github.com/basin-csi/basin/pkg/fuse/takeover"
	"github.com/basin-csi/basin/pkg/objstore"
)

// Create opens a new file for writing; it reaches the bucket at close.
func (d *dirNode) Create(ctx context.Context, name string, flags, mode uint32, out *gofuse.EntryOut) (*fs.Inode, fs.FileHandle, uint32, syscall.Errno) {
	f := d.fsys
	key, errno := d.newChildKey(name)
	if errno != 0 {
		return nil, nil, 0, errno
	}
	if _, errno := f.settleErrno(ctx, "create", key); errno != 0 {
		return nil, nil, 0, errno // an acknowledged file no node answers for comes first (settle.go)
	}
	// CREATE follows a negative lookup, which may be stale (kernel and
	// cache trust "missing" for NegativeMetadataTTL). With O_EXCL the bucket
	// decides: the name is claimed there at once (exclusive.go), and a
	// name another writer has fails with EEXIST. Without O_TRUNC or
	// O_EXCL an existing object's content must survive (copy-down on the
	// first write, as for an open): ask the bucket itself.
	var created map[string]string // a new file's metadata
	if mode&0o111 != 0 {
		// An executable (cp -p, pip, compilers): its mode is recorded.
		// Other new files keep the volume's mode, which follows the
		// volume's settings (fsGroup's group bits among them).
		created = withMode(nil, syscall.S_IFREG|mode&0o777)
	}
	var existing, claimed *objstore.ObjectInfo
	exclusive := false // claimed by its first upload (exclusiveupload.go)
	switch {
	case flags&syscall.O_EXCL != 0 && f.uploadsAfterClose():
		exclusive = true
	case flags&syscall.O_EXCL != 0:
		noted := f.noteClaim(key) // for a successor, should this process die (claims.go)
		info, err := f.claim(ctx, key, created)
		if errors.Is(err, objstore.ErrExists) {
			if mine, ok := f.predecessorsClaim(ctx, key, name); ok {
				info, err = mine, nil
			} else {
				d.lostClaim(key, name)
			}
		}
		if errors.Is(err, objstore.ErrExists) {
			// Another creator's object is there: a successor that got
			// this CREATE again must not take it for this process's claim.
			noted()
		} else {
			defer f.lingerNote(noted)
		}
		if err != nil {
			return nil, nil, 0, f.errno("create", key, err)
		}
		claimed = &info
	case flags&syscall.O_TRUNC == 0:
		sctx, cancel := f.opContext(ctx)
		info, err := f.store.Stat(sctx, key)
		cancel()
		switch {
		case err == nil:
			existing = &info
			f.cache.Invalidate(key)
		case !errors.Is(err, objstore.ErrNotFound):
			return nil, nil, 0, f.errno("create", key, err)
		}
	}
	ino, err := f.cache.InodeOf(key)
	if err != nil {
		f.unclaim(ctx, claimed)
		return nil, nil, 0, f.errno("create", key, err)
	}
	var w *writeState
	switch {
	case existing != nil:
		w = newWriteState(nil, ino, *existing)
	case claimed != nil:
		w, err = newClaimedState(f, ino, *claimed)
	default:
		w, err = newCreatedState(f, ino)
		if err == nil && exclusive {
			// One conditional upload at the end, never a stream: a
			// stream's parts go up before the name is claimed.
			w.claimToken, w.seq = newClaimToken(), false
		}
	}
	if err != nil {
		f.unclaim(ctx, claimed)
		return nil, nil, 0, f.errno("create", key, err)
	}
	fn := &fileNode{fsys: f, w: w, userOpens: 1}
	if existing != nil {
		fn.info = *existing
		fn.meta, _ = f.objectMetaAsk(ctx, *existing)
	} else if claimed != nil {
		fn.info = *claimed
	}
	if existing == nil {
		fn.meta = created
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
	ctx, cancel := f.changeContext(ctx)
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
	return d.fsys.carriedOut(takeover.OpRmdir, name, d.rmdir(ctx, name), nil)
}

func (d *dirNode) rmdir(ctx context.Context, name string) syscall.Errno {
	f := d.fsys
	key, errno := d.childKeyToChange(name)
	if errno != 0 {
		return errno
	}
	if ch := d.GetChild(name); ch != nil && stillWriting(ctx, ch) {
		return syscall.ENOTEMPTY
	}
	if errno := f.settlePrefixErrno(ctx, "rmdir", key); errno != 0 {
		return errno // an acknowledged file below makes it not empty
	}
	ctx, cancel := f.changeContext(ctx)
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
	f.cache.Removed(key, true) // gone for this mount's lookups at once
	d.forgetListing()
	return 0
}

// releaseWait bounds how long rmdir and a directory rename wait for the
// kernel's RELEASE of files closed just before: close(2) returns before
// the asynchronous RELEASE reaches the file system, so "write, close,
// rename the directory" would otherwise fail now and then with EBUSY.
const releaseWait = time.Second

// stillWriting reports whether a file under n is being written, after
// waiting up to releaseWait for the releases of files already closed.
func stillWriting(ctx context.Context, n *fs.Inode) bool {
	deadline := time.Now().Add(releaseWait)
	for hasPendingWrites(n) {
		if time.Now().After(deadline) || ctx.Err() != nil {
			return true
		}
		time.Sleep(5 * time.Millisecond)
	}
	return false
}

// uploadPendingUnder uploads the content of the files under n whose
// close was acknowledged and not uploaded yet (uploadMode async), before
// a rename of directory n copies their objects; in either mode it keeps
// the write states under n from installing their uploaded version into
// the cache under the old name when they finish.
func uploadPendingUnder(ctx context.Context, n *fs.Inode) error {
	if fn, ok := n.Operations().(*fileNode); ok {
		if w, _ := fn.writeStates(); w != nil {
			if err := w.uploadAcked(ctx); err != nil {
				return err
			}
			w.forgetUploaded() // its object moves with the directory
		}
		return nil
	}
	for _, ch := range n.Children() {
		if err := uploadPendingUnder(ctx, ch); err != nil {
			return err
		}
	}
	return nil
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

// Unlink deletes the object (NAME.rclonelink for a link in rclone's
// form); a file still being written here is not
// uploaded afterwards. A resent unlink the predecessor carried out
// succeeds (resent.go).
func (d *dirNode) Unlink(ctx context.Context, name string) syscall.Errno {
	return d.fsys.carriedOut(takeover.OpUnlink, name, d.unlink(ctx, name), nil)
}

func (d *dirNode) unlink(ctx context.Context, name string) syscall.Errno {
	f := d.fsys
	key, errno := d.childKeyToChange(name)
	if errno != 0 {
		return errno
	}
	if _, errno := f.settleErrno(ctx, "unlink", key); errno != 0 {
		return errno // an acknowledged file no node answers for comes first (settle.go)
	}
	if ch := d.GetChild(name); ch != nil {
		if fn, ok := ch.Operations().(*fileNode); ok {
			fn.unlinked()
		}
	}
	ctx, cancel := f.changeContext(ctx)
	defer cancel()
	key = d.objectKeyOf(ctx, name, key)
	if err := f.store.Delete(ctx, key); err != nil {
		return f.errno("unlink", key, err)
	}
	f.cache.Removed(key, false)
	d.forgetListing()
	return 0
}

// unlinked detaches the node from its object: pending data is discarded
// and open handles keep what they have.
func (n *fileNode) unlinked() {
	n.mu.Lock()
	w, finishing := n.w, n.finishing
	n.info.Key = ""
	n.mu.Unlock()
	for _, w := range []*writeState{w, finishing} {
		if w != nil {
			// Waits for a finish under way: its install into the cache
			// then comes before the removal is recorded.
			w.markUnlinked()
		}
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
// must also be a valid file name (EINVAL), and not one that holds a link
// in rclone's form (rclonelink.go).
func (d *dirNode) newChildKey(name string) (string, syscall.Errno) {
	if d.fsys.cfg.ReadOnly {
		return "", syscall.EROFS
	}
	if !validName(name) || d.fsys.hiddenName(name) {
		return "", syscall.EINVAL
	}
	return d.childKeyToChange(name)
}

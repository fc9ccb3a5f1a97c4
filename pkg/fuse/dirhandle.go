package fuse

import (
	"context"
	"sort"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/hanwen/go-fuse/v2/fs"
	gofuse "github.com/hanwen/go-fuse/v2/fuse"

	"github.com/basin-csi/basin/pkg/objstore"
)

// dirEntry is one name of a directory listing.
type dirEntry struct {
	name  string
	isDir bool
	link  bool // a symbolic link (posixmeta.go)
	// rclone: a link in rclone's form, info the object NAME.rclonelink
	// (rclonelink.go).
	rclone bool
	ino    uint64
	info   objstore.ObjectInfo // files only
}

// dirHandle is an open directory: a snapshot of one listing plus the files
// being created here that are not uploaded yet. go-fuse serialises the calls
// on one handle, so it needs no lock.
type dirHandle struct {
	// constant
	dir *dirNode
	key string

	entries []dirEntry
	pos     int  // index of the next entry
	pending bool // entries include files not yet in the bucket
	// resolved: the entries have their inode numbers and link marks
	// (resolve), which only a READDIR needs: an open whose kernel
	// readdir cache stays valid reads none, and so reads no index record
	// of its entries (a warm walk of 100,000 files touched about 60 MiB of
	// the index's pages; docs/architecture.md).
	resolved bool
}

var (
	_ fs.FileReaddirenter = (*dirHandle)(nil)
	_ fs.FileSeekdirer    = (*dirHandle)(nil)
	_ fs.FileLookuper     = (*dirHandle)(nil)
	_ fs.FileFsyncdirer   = (*dirHandle)(nil)
)

// load (re)reads the listing and returns its fetch time; resolve
// completes the entries before they are served.
func (h *dirHandle) load(ctx context.Context) (time.Time, syscall.Errno) {
	f := h.dir.fsys
	prefix := dirPrefix(h.key)
	// Acknowledged files no node answers for go to the bucket first, so
	// that the listing shows them (settle.go).
	if errno := f.settleChildrenErrno(ctx, "readdir", h.key); errno != 0 {
		return time.Time{}, errno
	}
	ctx, cancel := f.opContext(ctx)
	defer cancel()
	l, err := f.cache.List(ctx, prefix)
	if err != nil {
		return time.Time{}, f.errno("readdir", prefix, err)
	}
	files := make(map[string]bool, len(l.Objects))
	entries := make([]dirEntry, 0, len(l.Objects)+len(l.Prefixes))
	var links []objstore.ObjectInfo // in rclone's form
	for _, o := range l.Objects {
		name := strings.TrimPrefix(o.Key, prefix)
		if f.hiddenName(name) {
			links = append(links, o)
			continue
		}
		if !validName(name) || files[name] {
			continue // the marker itself, or a key that is no file name
		}
		files[name] = true
		entries = append(entries, dirEntry{name: name, info: o})
	}
	for _, o := range links {
		name, _ := f.rcloneLinkName(strings.TrimPrefix(o.Key, prefix))
		if files[name] {
			continue // a plain object of the same name wins
		}
		files[name] = true
		entries = append(entries, dirEntry{name: name, info: o, link: true, rclone: true})
	}
	dirs := make(map[string]bool, len(l.Prefixes))
	for _, p := range l.Prefixes {
		name := strings.TrimSuffix(strings.TrimPrefix(p, prefix), "/")
		if !validName(name) || files[name] || dirs[name] {
			continue // an object of the same name wins
		}
		dirs[name] = true
		entries = append(entries, dirEntry{name: name, isDir: true})
	}
	h.pending = false
	for name, ch := range h.dir.Children() {
		fn, ok := ch.Operations().(*fileNode)
		if !ok || files[name] || dirs[name] || !fn.pendingWrite() {
			continue
		}
		h.pending = true
		entries = append(entries, dirEntry{name: name, info: fn.currentInfo()})
	}
	sort.Slice(entries, func(i, j int) bool { return entries[i].name < entries[j].name })
	h.entries = entries
	h.pos = 0
	h.resolved = false
	return l.FetchedAt, 0
}

// resolve gives the loaded entries their inode numbers (one commit for
// all new names) and marks the symbolic links among them, once.
func (h *dirHandle) resolve(ctx context.Context) syscall.Errno {
	if h.resolved {
		return 0
	}
	f := h.dir.fsys
	ctx, cancel := f.opContext(ctx)
	defer cancel()
	f.markLinks(ctx, h.entries)
	keys := make([]string, len(h.entries))
	for i, e := range h.entries {
		keys[i] = childKey(h.key, e.name)
	}
	inos, err := f.cache.InodesOf(keys)
	if err != nil {
		return f.errno("readdir", dirPrefix(h.key), err)
	}
	for i := range h.entries {
		h.entries[i].ino = inos[i]
	}
	h.resolved = true
	return 0
}

// linkProbes bounds the HEADs a listing sends at once to learn which of
// its small objects are symbolic links. A cold walk of 5,000 zero-byte
// objects ran at 350 entries/s with 16 and 650-700 with 64 or 128 behind
// a 30 ms link (docs/architecture.md): past 64 the store's CPU limits it.
const linkProbes = 64

// markLinks marks the entries whose object is a symbolic link. Only
// objects up to symlinkMax bytes can be; their metadata comes from the
// listing (GCS) or the cache (once per version), else one HEAD each,
// linkProbes at once. A failed HEAD leaves the entry a file (the lookup
// asks again).
func (f *FS) markLinks(ctx context.Context, entries []dirEntry) {
	sem := make(chan struct{}, linkProbes)
	var wg sync.WaitGroup
	for i := range entries {
		e := &entries[i]
		if e.isDir || e.rclone || e.info.Size > symlinkMax {
			continue
		}
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			meta, _ := f.objectMeta(ctx, e.info)
			e.link = parsePosix(meta).isLink()
		})
	}
	wg.Wait()
}

// Readdirent returns the next entry; offsets are 1-based entry indexes.
func (h *dirHandle) Readdirent(ctx context.Context) (*gofuse.DirEntry, syscall.Errno) {
	if errno := h.resolve(ctx); errno != 0 {
		return nil, errno
	}
	if h.pos >= len(h.entries) {
		return nil, 0
	}
	e := h.entries[h.pos]
	h.pos++
	mode := uint32(syscall.S_IFREG)
	switch {
	case e.isDir:
		mode = syscall.S_IFDIR
	case e.link:
		mode = syscall.S_IFLNK
	}
	return &gofuse.DirEntry{Name: e.name, Mode: mode, Ino: e.ino, Off: uint64(h.pos)}, 0
}

// Seekdir positions before the entry with 1-based index off+1; 0 rewinds
// and re-reads the listing, as rewinddir(3) expects.
func (h *dirHandle) Seekdir(ctx context.Context, off uint64) syscall.Errno {
	if off == 0 {
		_, errno := h.load(ctx)
		return errno
	}
	if off > uint64(len(h.entries)) {
		off = uint64(len(h.entries))
	}
	h.pos = int(off)
	return 0
}

// Lookup answers READDIRPLUS from the listing, without a request.
func (h *dirHandle) Lookup(ctx context.Context, name string, out *gofuse.EntryOut) (*fs.Inode, syscall.Errno) {
	if errno := h.resolve(ctx); errno != 0 {
		return nil, errno
	}
	var e *dirEntry
	if h.pos > 0 && h.pos <= len(h.entries) && h.entries[h.pos-1].name == name {
		e = &h.entries[h.pos-1]
	} else {
		i := sort.Search(len(h.entries), func(i int) bool { return h.entries[i].name >= name })
		if i == len(h.entries) || h.entries[i].name != name {
			return h.dir.Lookup(ctx, name, out)
		}
		e = &h.entries[i]
	}
	key := childKey(h.key, name)
	if e.isDir {
		return h.dir.dirChild(ctx, name, key, e.ino, out)
	}
	if ch := h.dir.GetChild(name); ch != nil {
		if fn, ok := ch.Operations().(*fileNode); ok && fn.pendingWrite() {
			fn.fillAttr(&out.Attr)
			return ch, 0
		}
	}
	if e.rclone {
		return h.dir.rcloneLinkChild(ctx, name, key, e.info, e.ino, out)
	}
	return h.dir.fileChild(ctx, name, key, e.info, e.ino, out)
}

// Fsyncdir succeeds: directory changes are in the bucket when their
// operation returns.
//
// With uploadMode async it uploads every file whose close was acknowledged
// and not uploaded yet, in the whole volume: the kernel never sends
// FUSE_SYNCFS to a FUSE server (virtiofs only), so sync(1) and syncfs(2)
// cannot wait for them, and a directory fsync is the barrier.
func (h *dirHandle) Fsyncdir(ctx context.Context, _ uint32) syscall.Errno {
	if err := h.dir.fsys.uploads.flushAll(context.WithoutCancel(ctx)); err != nil {
		return h.dir.fsys.errno("fsyncdir", h.key, err)
	}
	return 0
}

package fuse

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/hanwen/go-fuse/v2/fs"
	gofuse "github.com/hanwen/go-fuse/v2/fuse"
	"k8s.io/klog/v2"

	"github.com/basin-csi/basin/pkg/cache"
	"github.com/basin-csi/basin/pkg/objstore"
)

// FS is one volume's file system. Create it with New, then Mount it once.
type FS struct {
	// constant after New
	cfg     Config
	store   objstore.Store
	cache   cacheBackend
	writes  *stagedWrites
	root    *dirNode
	started time.Time
	// inodeReads serves READs without a file handle (OpenKernel).
	inodeReads *inodeReaders

	// mountMu guards mounted and server. server is set once by Mount
	// before the first request is served and read by the passthrough probe.
	mountMu sync.Mutex
	mounted bool
	server  *gofuse.Server

	ptOnce sync.Once
	ptOK   bool // written once inside ptOnce
	// pinned reports inodes whose opens must not choose passthrough: they
	// keep the I/O mode of a dead predecessor's open files, or a file of
	// theirs in another mode is being released (takeover.Session.Pinned);
	// set by Mount before the first request, nil when not mounted.
	pinned func(ino uint64) bool
	// resent holds the requests resent after a takeover that the file
	// system is answering (resentKey; resent.go).
	resent sync.Map
	// claims are the exclusive creates a dead predecessor left unanswered
	// (claims.go); read by Mount before serving. claimLinger is how long a
	// claim's note outlives its CREATE (claimNoteLinger; tests set it).
	claims      inheritedClaims
	claimLinger time.Duration
	// uploads runs the uploads after close (uploadMode: async) and those
	// of the files a predecessor acknowledged (recovery); acked indexes
	// the pending ones no node of the tree answers for (settle.go).
	uploads *uploader
	acked   ackedKeys
	// parts holds the parts of the streamed uploads in flight
	// (stagedsource.go).
	parts *partPool

	counters counters
}

// New builds the file system of one volume from its store (already scoped
// to the volume's prefix) and its cache over that store.
func New(cfg Config, store objstore.Store, c *cache.Cache) (*FS, error) {
	if c == nil {
		return nil, fmt.Errorf("%w: nil cache", ErrInvalidConfig)
	}
	return newFS(cfg, store, cacheAdapter{c})
}

func newFS(cfg Config, store objstore.Store, c cacheBackend) (*FS, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if store == nil {
		return nil, fmt.Errorf("%w: nil store", ErrInvalidConfig)
	}
	f := &FS{cfg: cfg.withDefaults(), store: store, cache: c, writes: newStagedWrites(c.WritesDir()), started: time.Now(),
		inodeReads: newInodeReaders(inodeReadersPerInode, inodeReadersTotal), claimLinger: claimNoteLinger}
	f.root = &dirNode{fsys: f}
	f.uploads = newUploader(f)
	f.parts = newPartPool(f.cfg.StreamPartSize, partSlots(f.cfg.BufferSize, f.cfg.StreamPartSize, f.cfg.StreamParts))
	if a, ok := c.(cacheAdapter); ok {
		a.ReportUploads(f.uploadUsage) // in the usage file, for VolumeCache (pkg/cachestatus)
	}
	return f, nil
}

// opContext bounds one operation's requests to the bucket.
func (f *FS) opContext(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(ctx, f.cfg.OpTimeout)
}

// changeContext bounds a change of the bucket's names (create, mkdir,
// symlink, unlink, rmdir, rename, a claim, a metadata update) by the op
// timeout alone: a signal to the caller, which the kernel forwards as an
// interrupt, does not cut it short. The caller could not tell whether a
// change cut short was made (an object store has no undo), and Go's
// runtime signals its threads all the time (preemption), so the change
// runs to its end and the caller gets its true outcome.
func (f *FS) changeContext(ctx context.Context) (context.Context, context.CancelFunc) {
	return f.opContext(context.WithoutCancel(ctx))
}

// transferContext bounds a transfer of size bytes (copy-down, upload): the
// op timeout plus one second per MiB, so a dead bucket still fails in
// bounded time while a large upload over a slow link is not cut off.
func (f *FS) transferContext(ctx context.Context, size int64) (context.Context, context.CancelFunc) {
	return context.WithTimeout(ctx, f.cfg.OpTimeout+time.Duration(size>>20)*time.Second)
}

// keyOf returns the volume path of an inode by walking up to the root (or
// to a node revived by number, see revive.go); false if the inode was
// unlinked or lies outside this file system's tree.
func (f *FS) keyOf(n *fs.Inode) (string, bool) {
	root := f.root.EmbeddedInode()
	var segs []string
	for p := n; p != root; {
		name, parent := p.Parent()
		if parent == nil {
			base, ok := revivedKey(p)
			if !ok {
				return "", false
			}
			if base != "" {
				segs = append(segs, base)
			}
			break
		}
		segs = append(segs, name)
		p = parent
	}
	for i, j := 0, len(segs)-1; i < j; i, j = i+1, j-1 {
		segs[i], segs[j] = segs[j], segs[i]
	}
	return strings.Join(segs, "/"), true
}

// childKey joins a directory path and a name.
func childKey(dir, name string) string {
	if dir == "" {
		return name
	}
	return dir + "/" + name
}

// dirPrefix is the listing prefix of a directory path.
func dirPrefix(dir string) string {
	if dir == "" {
		return ""
	}
	return dir + "/"
}

// validName reports whether a key segment can be shown as a file name.
func validName(name string) bool {
	return name != "" && name != "." && name != ".." && len(name) <= 255 &&
		!strings.ContainsAny(name, "/\x00")
}

func (f *FS) fillFileAttr(out *gofuse.Attr, size int64, mtime time.Time) {
	out.Mode = syscall.S_IFREG | uint32(f.cfg.FileMode)
	out.Nlink = 1
	out.Size = uint64(size)
	out.Blocks = (uint64(size) + 511) / 512
	out.Blksize = 1 << 20
	out.Uid, out.Gid = uint32(f.cfg.UID), uint32(f.cfg.GID)
	if mtime.IsZero() {
		mtime = f.started
	}
	out.SetTimes(&mtime, &mtime, &mtime)
}

func (f *FS) fillDirAttr(out *gofuse.Attr) {
	out.Mode = syscall.S_IFDIR | uint32(f.cfg.DirMode)
	out.Nlink = 2
	out.Size = 4096
	out.Blksize = 1 << 20
	out.Uid, out.Gid = uint32(f.cfg.UID), uint32(f.cfg.GID)
	t := f.started
	out.SetTimes(&t, &t, &t)
}

// errno maps err and logs what is worth logging.
func (f *FS) errno(op, key string, err error) syscall.Errno {
	e := toErrno(err)
	switch e {
	case 0:
	case syscall.ENOENT, syscall.EEXIST, syscall.ENOTEMPTY, syscall.EINTR:
		klog.V(4).InfoS("fuse op failed", "volume", f.cfg.VolumeID, "op", op, "key", key, "errno", e, "err", err)
	default:
		klog.ErrorS(err, "fuse op failed", "volume", f.cfg.VolumeID, "op", op, "key", key, "errno", e)
	}
	return e
}

// passthroughFor reports whether an open of ino may use FUSE passthrough:
// it works on this mount and ino is not pinned (inherited open files in
// another mode, or the release of one of its files in another mode under
// way).
func (f *FS) passthroughFor(ino uint64) bool {
	return f.passthroughOK() && (f.pinned == nil || !f.pinned(ino))
}

// passthroughOK reports whether FUSE passthrough works on this mount: the
// kernel negotiated it and registering a backing file succeeds (root or
// CAP_SYS_ADMIN, cache directory on a non-stacked file system). Probed once,
// at the first open, when the connection is initialised.
func (f *FS) passthroughOK() bool {
	f.ptOnce.Do(func() {
		f.mountMu.Lock()
		srv := f.server
		f.mountMu.Unlock()
		if f.cfg.DisablePassthrough || srv == nil {
			return
		}
		probe, err := os.CreateTemp(f.cache.StagingDir(), ".passthrough-probe-*")
		if err != nil {
			klog.ErrorS(err, "passthrough probe: cannot create a file; reads stay in user space", "volume", f.cfg.VolumeID)
			return
		}
		defer func() { _ = os.Remove(probe.Name()) }()
		defer func() { _ = probe.Close() }()
		id, errno := srv.RegisterBackingFd(&gofuse.BackingMap{Fd: int32(probe.Fd())})
		if errno != 0 {
			klog.InfoS("FUSE passthrough unavailable; reads stay in user space", "volume", f.cfg.VolumeID, "errno", errno)
			return
		}
		if errno := srv.UnregisterBackingFd(id); errno != 0 {
			klog.ErrorS(errors.New(errno.Error()), "passthrough probe: unregister failed", "volume", f.cfg.VolumeID)
		}
		f.ptOK = true
		klog.InfoS("FUSE passthrough enabled for fully cached files", "volume", f.cfg.VolumeID)
	})
	return f.ptOK
}

// Statfs reports the cache's capacity and use; a cache without a size cap
// reports 1 PiB.
func (f *FS) statfs(out *gofuse.StatfsOut) {
	const bsize = 4096
	st := f.cache.Stats()
	capacity := st.Capacity
	if capacity <= 0 {
		capacity = 1 << 50
	}
	used := min(max(st.UsedBytes, 0), capacity)
	out.Bsize = bsize
	out.Frsize = bsize
	out.Blocks = uint64(capacity / bsize)
	out.Bfree = uint64((capacity - used) / bsize)
	out.Bavail = out.Bfree
	out.Files = 1 << 32
	out.Ffree = out.Files - uint64(min(max(st.Objects, 0), 1<<32))
	out.NameLen = 255
}

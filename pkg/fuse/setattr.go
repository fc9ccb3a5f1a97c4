package fuse

import (
	"context"
	"errors"
	"syscall"
	"time"

	gofuse "github.com/hanwen/go-fuse/v2/fuse"
	"k8s.io/klog/v2"

	"github.com/basin-csi/basin/pkg/objstore"
)

// applyPosix puts recorded attributes over the volume's defaults: the
// permission bits, and (withMtime) the modification time. The owner stays
// the volume's: its uid and gid settings are what pods are given access
// by; a chown is recorded for other tools only.
func applyPosix(out *gofuse.Attr, a posixAttrs, withMtime bool) {
	if a.mode != 0 && a.mode&syscall.S_IFMT == syscall.S_IFREG {
		out.Mode = syscall.S_IFREG | a.mode&0o777
	}
	if withMtime && !a.mtime.IsZero() {
		out.SetTimes(nil, &a.mtime, &a.mtime)
	}
}

// objectMeta returns the user metadata of the object version info: known
// when info, a HEAD or this mount's writes told it; asked of the bucket (a
// HEAD, once per version, recorded in the cache) only for objects up to
// symlinkMax bytes, the only ones that can be links. Larger objects whose
// metadata nobody told show the volume's defaults.
func (f *FS) objectMeta(ctx context.Context, info objstore.ObjectInfo) (map[string]string, bool) {
	meta, known, err := f.cache.ObjectMetadata(ctx, info, info.Size <= symlinkMax)
	if err != nil {
		klog.V(4).InfoS("object metadata unknown", "volume", f.cfg.VolumeID, "key", info.Key, "err", err)
		return nil, false
	}
	return meta, known
}

// setPosix records the mode, owner and modification time in.Setattr
// changes. While the file is being written they go up with its upload;
// otherwise the object's metadata is replaced on the server
// (objstore.MetadataSetter: no upload of the content).
func (n *fileNode) setPosix(ctx context.Context, in *gofuse.SetAttrIn) syscall.Errno {
	mode, setMode := in.GetMode()
	uid, setUID := in.GetUID()
	gid, setGID := in.GetGID()
	mtime, setMtime := in.GetMTime()
	if !setMode && !setUID && !setGID && !setMtime {
		return 0
	}
	change := func(meta map[string]string) map[string]string {
		if setMode {
			meta = withMode(meta, syscall.S_IFREG|mode&0o777)
		}
		if setUID || setGID {
			var u, g *uint32
			if setUID {
				u = &uid
			}
			if setGID {
				g = &gid
			}
			meta = withOwner(meta, u, g)
		}
		if setMtime {
			meta = withMtime(meta, mtime)
		}
		return meta
	}
	key, linked := n.key()
	n.mu.Lock()
	w, info, meta := n.w, n.info, n.meta
	if w != nil {
		n.meta = change(n.meta)
		if setMtime {
			w.mtime.Store(mtime.UnixNano())
		}
	}
	n.mu.Unlock()
	if w != nil && n.fsys.uploadsAfterClose() {
		w.refreshAck() // an acknowledged close not uploaded yet
	}
	if (w != nil && w.pendingUpload()) || !linked || info.Key == "" {
		return 0 // the coming upload carries it (or there is no object yet)
	}
	ctx, cancel := n.fsys.changeContext(ctx)
	defer cancel()
	if meta == nil {
		// Keep what the object has: fetch it before replacing it.
		info.Key = key
		if m, known := n.fsys.objectMetaAsk(ctx, info); known {
			meta = m
		}
	}
	next := change(meta)
	done, err := objstore.SetMetadataOf(ctx, n.fsys.store, key, next, info.Version)
	if errors.Is(err, objstore.ErrPreconditionFailed) {
		// Our version is stale: apply the change to the current one.
		var fresh objstore.ObjectInfo
		if fresh, err = n.fsys.store.Stat(ctx, key); err == nil {
			next = change(fresh.Metadata)
			done, err = objstore.SetMetadataOf(ctx, n.fsys.store, key, next, fresh.Version)
		}
	}
	if err != nil {
		return n.fsys.errno("setattr", key, err)
	}
	if done.Key == "" {
		done.Key = key
	}
	done.Metadata = next
	n.fsys.cache.Wrote(done)
	n.mu.Lock()
	n.meta = next
	if n.w == nil {
		n.info = done
	}
	n.mu.Unlock()
	return 0
}

// objectMetaAsk is objectMeta that asks the bucket whatever the size.
func (f *FS) objectMetaAsk(ctx context.Context, info objstore.ObjectInfo) (map[string]string, bool) {
	meta, known, err := f.cache.ObjectMetadata(ctx, info, true)
	if err != nil {
		return nil, false
	}
	return meta, known
}

// uploadMeta is the metadata an upload of the node's content carries: what
// the object had, with the modification time (if one is recorded) moved to
// the last write. Nil when there is none.
func (n *fileNode) uploadMeta(w *writeState) map[string]string {
	n.mu.Lock()
	meta := n.meta
	n.mu.Unlock()
	if len(meta) == 0 {
		return nil
	}
	if hasMtime(meta) {
		meta = withMtime(meta, time.Unix(0, w.mtime.Load()))
	}
	return meta
}

package fuse

import (
	"context"
	"errors"
	"strings"
	"time"

	"k8s.io/klog/v2"

	"github.com/basin-csi/basin/pkg/objstore"
)

// An exclusive create (O_CREAT|O_EXCL) claims its name in the bucket at
// once: a zero-byte object stored with the store's conditional create
// (objstore.PutOptions.IfAbsent: If-None-Match on S3 and MinIO,
// x-oss-forbid-overwrite on OSS, ifGenerationMatch=0 on GCS, link(2) on a
// local directory). Of two mounts, on any nodes, creating one name, the
// store lets exactly one claim succeed; the other's open(2) fails with
// EEXIST. That is what lock files and "claim a shard" patterns need: the
// loser learns at open, not at a later close.
//
// The claim is the file's first version: a file closed unwritten is
// already in the bucket (no second upload), and the owner's data goes up
// at close or fsync over the claim, unconditionally, as every upload does.
// The cost is one small PUT per exclusive create (cp, tar and mkstemp
// create with O_EXCL) in place of the lookup it replaces.

// claim stores key as an empty object with metadata meta (nil: none) if
// no object has that name, and records it in the cache as this mount's
// own write. objstore.ErrExists: another creator has the name.
func (f *FS) claim(ctx context.Context, key string, meta map[string]string) (objstore.ObjectInfo, error) {
	ctx, cancel := f.changeContext(ctx)
	defer cancel()
	token := newClaimToken()
	info, err := f.store.Put(ctx, key, strings.NewReader(""), objstore.PutOptions{Size: 0, IfAbsent: true, Metadata: withClaimToken(meta, token)})
	if errors.Is(err, objstore.ErrExists) {
		if own, ok := f.ownClaim(ctx, key, token); ok {
			// The store client sent the claim again (its first answer
			// was lost) and the retry found the first attempt's object.
			klog.InfoS("an exclusive create retried by the store client found its own claim", "volume", f.cfg.VolumeID, "key", key)
			info, err = own, nil
		}
	}
	if err != nil {
		return objstore.ObjectInfo{}, err
	}
	info.Key, info.Size = key, 0
	info.Metadata = objstore.NormalizeMetadata(meta)
	if info.ModTime.IsZero() {
		info.ModTime = time.Now()
	}
	f.cache.Wrote(info)
	return info, nil
}

// lostClaim runs when another creator has key, child name of d: the
// "missing" this mount believed (the negative entries of the cache and
// of the kernel that let the CREATE come) is wrong, so both are dropped
// and the caller's next open or stat finds the winner's file. The kernel
// holds d's lock while it waits for the CREATE's answer, so its entry is
// dropped once the answer is sent.
func (d *dirNode) lostClaim(key, name string) {
	d.fsys.cache.Invalidate(key)
	d.forgetListing()
	go func() { _ = d.NotifyEntry(name) }()
}

// unclaim removes the claim of a create that failed after it (nil: none),
// so the name is free again.
func (f *FS) unclaim(ctx context.Context, claim *objstore.ObjectInfo) {
	if claim == nil {
		return
	}
	ctx, cancel := f.changeContext(ctx)
	defer cancel()
	if err := f.store.Delete(ctx, claim.Key); err != nil {
		klog.ErrorS(err, "removing the claim of a failed exclusive create", "volume", f.cfg.VolumeID, "key", claim.Key)
	}
	f.cache.Invalidate(claim.Key)
}

// newClaimedState is the write state of a file created by a claim: empty,
// and clean, since the bucket holds that empty version already.
func newClaimedState(f *FS, ino uint64, claim objstore.ObjectInfo) (*writeState, error) {
	w, err := newCreatedState(f, ino)
	if err != nil {
		return nil, err
	}
	w.dirty = false
	w.uploaded = &claim
	return w, nil
}

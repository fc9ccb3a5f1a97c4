package fuse

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"k8s.io/klog/v2"

	"github.com/basin-csi/basin/pkg/objstore"
)

// An exclusive create in uploadMode async claims its name with its first
// upload, not at create (exclusive.go claims at create in sync mode). An
// async close is acknowledged before the bucket has the file, so other
// nodes do not see a new file until its upload anyway; a claim at create
// would cost every create one bucket round trip, which is what caps a
// single-threaded `cp -r` (docs/architecture.md, "uploadMode: async").
// The exclusivity that remains:
//
//   - within the mount, the kernel's: a second O_EXCL create of a name
//     the mount knows fails with EEXIST;
//   - across mounts, the bucket's: the file's first upload is a
//     conditional create (objstore.PutOptions.IfAbsent). When another
//     writer stored the name since this mount looked it up (another node,
//     or an object its stale "missing" did not know), nothing is lost:
//     that object is first copied to "<name>.conflict-<UTC time>", then
//     this file, whose close was acknowledged, is uploaded over the name
//     as any upload is. Each such conflict is logged and counted
//     (Stats.CreateConflicts, basin_fuse_create_conflicts_total).
//
// Programs that need O_EXCL to decide between nodes at open (lock files,
// "claim a shard") keep the default uploadMode sync.

// conflictSuffix starts the suffix of the key an exclusive create's
// conflict keeps the other writer's object under.
const conflictSuffix = ".conflict-"

// conflictKey is where an object met by an exclusive create's first
// upload at t is kept.
func conflictKey(key string, t time.Time) string {
	return key + conflictSuffix + t.UTC().Format("20060102T150405.000Z")
}

// putStaged uploads size bytes of src (a staged file) as key, with
// metadata meta: as an exclusive create's first version when claimToken is
// set (see above), else unconditionally.
func (f *FS) putStaged(ctx context.Context, key string, src io.ReaderAt, size int64, meta map[string]string, claimToken string) (objstore.ObjectInfo, error) {
	put := func(opts objstore.PutOptions) (objstore.ObjectInfo, error) {
		opts.Size = size
		return f.store.Put(ctx, key, io.NewSectionReader(src, 0, size), opts)
	}
	if claimToken == "" {
		return put(objstore.PutOptions{Metadata: meta})
	}
	info, err := put(objstore.PutOptions{Metadata: withClaimToken(meta, claimToken), IfAbsent: true})
	if !errors.Is(err, objstore.ErrExists) {
		return info, err
	}
	if own, ok := f.ownClaim(ctx, key, claimToken); ok {
		// An earlier attempt of this upload stored it (its answer was
		// lost, or it was this file's upload by a dead predecessor).
		return own, nil
	}
	aside := conflictKey(key, time.Now())
	if _, err := f.store.Copy(ctx, key, aside); err != nil {
		// Gone again (or not yet complete): the next try decides.
		return objstore.ObjectInfo{}, fmt.Errorf("keeping the object another writer stored since the exclusive create: %w", err)
	}
	f.counters.createConflicts.Add(1)
	klog.ErrorS(nil, "an exclusively created file met another writer's object at its upload; that object is kept aside and the file uploaded over it",
		"volume", f.cfg.VolumeID, "key", key, "keptAs", aside)
	return put(objstore.PutOptions{Metadata: meta})
}

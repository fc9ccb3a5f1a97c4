package fuse

import (
	"context"
	"os"

	"github.com/basin-csi/basin/pkg/cache"
	"github.com/basin-csi/basin/pkg/objstore"
)

// cacheBackend is what the file system uses of a *cache.Cache. It exists so
// the file system's logic can be tested with a hand-written fake; New wraps
// the real cache in cacheAdapter.
type cacheBackend interface {
	Stat(ctx context.Context, key string) (objstore.ObjectInfo, error)
	List(ctx context.Context, dirPrefix string) (cache.Listing, error)
	Invalidate(key string)
	Wrote(info objstore.ObjectInfo)
	MadeDir(key string)
	Removed(key string, dir bool)
	ObjectMetadata(ctx context.Context, info objstore.ObjectInfo, probe bool) (map[string]string, bool, error)
	InodeOf(path string) (uint64, error)
	InodesOf(paths []string) ([]uint64, error)
	PathOf(ino uint64) (string, bool)
	KnownDir(key string) (isDir, known bool)
	Prime(ctx context.Context, dirPrefix string) error
	RenameInodes(src, dst string) error
	OpenObject(ctx context.Context, info objstore.ObjectInfo) (objectHandle, error)
	StagingDir() string
	WritesDir() string
	Install(ctx context.Context, info objstore.ObjectInfo, stagedPath string) error
	Stats() cache.Stats
}

// objectHandle is a pinned object version (*cache.Handle).
type objectHandle interface {
	Info() objstore.ObjectInfo
	ReadAt(ctx context.Context, p []byte, off int64) (int, error)
	Prefetch(off, length int64)
	// PrefetchWindow is how far ahead of a sequential reader to prefetch
	// now (it follows the cache's fetch parallelism).
	PrefetchWindow() int64
	// LocalFile is the complete data file, valid until Close; not to be
	// closed by the caller.
	LocalFile() (*os.File, bool)
	Close() error
}

// cacheAdapter makes *cache.Cache a cacheBackend.
type cacheAdapter struct{ *cache.Cache }

func (a cacheAdapter) OpenObject(ctx context.Context, info objstore.ObjectInfo) (objectHandle, error) {
	h, err := a.Cache.OpenObject(ctx, info)
	if err != nil {
		return nil, err
	}
	return h, nil
}

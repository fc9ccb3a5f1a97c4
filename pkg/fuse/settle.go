package fuse

import (
	"context"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
)

// Acknowledged files no node of the tree answers for. An acknowledged
// close (uploadMode async, stagedack.go) is pending in one of two forms
// that no lookup finds by walking the tree:
//
//   - a file a previous process acknowledged and did not upload
//     (recoveredFile);
//   - a file of this process whose inode the kernel forgot (a dropped
//     entry, memory pressure) before its upload ran: its write state
//     lives on, held by the upload job, but its node is out of the tree,
//     and a new lookup of the name makes another node (writeState.settle).
//
// Both are indexed here by the key they were acknowledged under. An
// operation on such a key (lookup, a listing's entry, create, unlink,
// rename, a revival by number), a listing of its directory
// (settleChildren), or a rename or rmdir of a directory above it
// (settlePrefix) uploads the file first or waits for its upload under
// way, so nobody sees or changes the bucket's older object, misses the
// file in a listing, or moves a directory without it.

// settler is a pending acknowledged file of the index.
type settler interface {
	// settle uploads the file now if no node answers for it, or waits
	// for its upload under way; it reports whether it did (the caller's
	// attributes of the key are then stale).
	settle(ctx context.Context) (bool, error)
}

// ackedKeys is the index, by key.
type ackedKeys struct {
	n     atomic.Int32 // len(byKey): the fast path skips the lock
	mu    sync.Mutex
	byKey map[string]settler // guarded by mu
}

func (ak *ackedKeys) add(key string, s settler) {
	ak.mu.Lock()
	defer ak.mu.Unlock()
	if ak.byKey == nil {
		ak.byKey = map[string]settler{}
	}
	ak.byKey[key] = s
	ak.n.Store(int32(len(ak.byKey)))
}

// forget removes key's entry if it is still s.
func (ak *ackedKeys) forget(key string, s settler) {
	ak.mu.Lock()
	defer ak.mu.Unlock()
	if ak.byKey[key] == s {
		delete(ak.byKey, key)
	}
	ak.n.Store(int32(len(ak.byKey)))
}

func (ak *ackedKeys) get(key string) settler {
	if ak.n.Load() == 0 {
		return nil
	}
	ak.mu.Lock()
	defer ak.mu.Unlock()
	return ak.byKey[key]
}

// under returns the entries of the keys under prefix (a directory's,
// with its slash; "" for the root): all of them, or with children only
// those of the directory itself.
func (ak *ackedKeys) under(prefix string, children bool) []settler {
	if ak.n.Load() == 0 {
		return nil
	}
	ak.mu.Lock()
	defer ak.mu.Unlock()
	var out []settler
	for k, s := range ak.byKey {
		rest, ok := strings.CutPrefix(k, prefix)
		if ok && (!children || !strings.Contains(rest, "/")) {
			out = append(out, s)
		}
	}
	return out
}

// settle settles the pending acknowledged file of key, if any, before an
// operation on key; it reports whether there was one to upload.
func (f *FS) settle(ctx context.Context, key string) (bool, error) {
	s := f.acked.get(key)
	if s == nil {
		return false, nil
	}
	return s.settle(ctx)
}

// settleErrno is settle for a file system operation: EIO (or the store's
// error) when the upload fails.
func (f *FS) settleErrno(ctx context.Context, op, key string) (bool, syscall.Errno) {
	settled, err := f.settle(ctx, key)
	if err != nil {
		return settled, f.errno(op, key, err)
	}
	return settled, 0
}

// settlePrefixErrno settles every pending acknowledged file under
// directory dir before a rename or removal of dir.
func (f *FS) settlePrefixErrno(ctx context.Context, op, dir string) syscall.Errno {
	return f.settleUnder(ctx, op, dir, dirPrefix(dir), false)
}

// settleChildrenErrno settles the pending acknowledged files of
// directory dir itself before a listing of it, which then shows them.
func (f *FS) settleChildrenErrno(ctx context.Context, op, dir string) syscall.Errno {
	return f.settleUnder(ctx, op, dir, dirPrefix(dir), true)
}

func (f *FS) settleUnder(ctx context.Context, op, dir, prefix string, children bool) syscall.Errno {
	for _, s := range f.acked.under(prefix, children) {
		if _, err := s.settle(ctx); err != nil {
			return f.errno(op, dir, err)
		}
	}
	return 0
}

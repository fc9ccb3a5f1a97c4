package fuse

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"

	"k8s.io/klog/v2"

	"github.com/basin-csi/basin/pkg/objstore"
)

// An exclusive create the kernel resends after a takeover must not fail
// because its own claim, sent by the dead process, is in the bucket: the
// dead process may have stored the claim and died before it answered, and
// then the resent CREATE meets ErrExists. So every claim in flight leaves
// a note in WritesDir, "claim-*" holding the key, from before its PUT until
// the CREATE returns. A successor reads the notes before serving
// (pendingClaims; the staged-writes scan then removes them), and answers
// the first exclusive CREATE of such a key that finds an empty object
// there as done: the object is the claim its predecessor made for that
// very request. A note costs a small file's create and unlink in the
// cache directory (no fsync: only a process death, which keeps the page
// cache, matters here).

// claimNotePrefix starts the names of claim notes in WritesDir; the
// staged-writes scan removes what does not parse as a staged file.
const claimNotePrefix = "claim-"

// noteClaim leaves the note of a claim of key in flight; the returned
// function removes it.
func (f *FS) noteClaim(key string) (done func()) {
	file, err := os.CreateTemp(f.writes.dir, claimNotePrefix+"*")
	if err == nil {
		_, err = file.WriteString(key)
		if cerr := file.Close(); err == nil {
			err = cerr
		}
	}
	if err != nil {
		// Only a takeover in the next instant would miss it.
		klog.V(2).InfoS("no note of a claim in flight", "volume", f.cfg.VolumeID, "key", key, "err", err)
		if file != nil {
			_ = os.Remove(file.Name())
		}
		return func() {}
	}
	return func() { _ = os.Remove(file.Name()) }
}

// inheritedClaims are the keys a dead predecessor was claiming when it
// died, each answered as done once.
type inheritedClaims struct {
	mu   sync.Mutex
	keys map[string]bool // guarded by mu
}

// readClaimNotes returns the keys of the claim notes in dir.
func readClaimNotes(dir string) map[string]bool {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil
	}
	keys := map[string]bool{}
	for _, e := range entries {
		if !strings.HasPrefix(e.Name(), claimNotePrefix) {
			continue
		}
		if b, err := os.ReadFile(filepath.Join(dir, e.Name())); err == nil && len(b) > 0 {
			keys[string(b)] = true
		}
	}
	return keys
}

// take reports whether key was being claimed by the predecessor, once.
func (c *inheritedClaims) take(key string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.keys[key] {
		return false
	}
	delete(c.keys, key)
	return true
}

// predecessorsClaim returns the object at key when it is the claim the
// dead predecessor made for a CREATE it never answered: a claim note of
// key was left, and key holds an empty object.
func (f *FS) predecessorsClaim(ctx context.Context, key string) (objstore.ObjectInfo, bool) {
	if !f.claims.take(key) {
		return objstore.ObjectInfo{}, false
	}
	ctx, cancel := f.opContext(ctx)
	defer cancel()
	info, err := f.store.Stat(ctx, key)
	if err != nil || info.Size != 0 {
		if err != nil && !errors.Is(err, objstore.ErrNotFound) {
			klog.ErrorS(err, "checking the claim of the previous process", "volume", f.cfg.VolumeID, "key", key)
		}
		return objstore.ObjectInfo{}, false
	}
	klog.InfoS("an exclusive create resent after the takeover was carried out by the previous process", "volume", f.cfg.VolumeID, "key", key)
	f.cache.Wrote(info)
	return info, true
}

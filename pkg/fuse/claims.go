package fuse

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"k8s.io/klog/v2"

	"github.com/basin-csi/basin/pkg/fuse/takeover"
	"github.com/basin-csi/basin/pkg/objstore"
)

// An exclusive create the kernel resends after a takeover must not fail
// because its own claim, sent by the dead process, is in the bucket: the
// dead process may have stored the claim and died before it answered, and
// then the resent CREATE meets ErrExists. So every claim in flight leaves
// a note in WritesDir, "claim-*" holding the key, from before its PUT until
// claimNoteLinger after the CREATE returned: go-fuse sends the reply after
// the file system returned, and a process killed in between left no note
// while the kernel still resent the CREATE (make soak: a kill 212 ms after
// the create reached a process just thawed from a SIGSTOP; the standby
// answered EEXIST for the writer's own new file). A successor reads the
// notes before serving (pendingClaims; the staged-writes scan then removes
// them), and answers an exclusive CREATE of such a key that the kernel
// resent (takeover.OpCreate) and that finds an empty object there as done,
// once: the object is the claim its predecessor made for that very
// request. A CREATE that is not resent is a new one and gets EEXIST, so a
// note that outlived its answered CREATE never gives a second creator the
// name. A note costs a small file's create and unlink in the cache
// directory (no fsync: only a process death, which keeps the page cache,
// matters here).
//
// The successor notes each inherited key again, with the first note's
// time, once it has scanned (carryClaims), and removes that note when the
// key is answered: a successor killed too before the kernel resent it the
// CREATE leaves the key to the next one (make soak: two FUSE kills 1.7 s
// apart while MinIO was stopped; the third process answered the resent
// exclusive create EEXIST for the writer's own new file). A key older than
// claimNoteAge is not carried on: the kernel resends within a takeover.
// Keys no resent CREATE took within claimCarryWindow of the start (their
// CREATE was answered just before the predecessor died), and all of them
// at a clean unmount, are dropped with their notes.

// claimNotePrefix starts the names of claim notes in WritesDir; the
// staged-writes scan removes what does not parse as a staged file.
const claimNotePrefix = "claim-"

// claimNoteAge bounds how long an unanswered claim is carried from
// process to process; claimCarryWindow is how long a process waits for
// the resent CREATEs of the claims it inherited (the kernel resends them
// as soon as it serves).
const (
	claimNoteAge     = 2 * time.Minute
	claimCarryWindow = 30 * time.Second
	claimNoteLinger  = 10 * time.Second
)

// noteClaim leaves the note of a claim of key in flight; the returned
// function removes it.
func (f *FS) noteClaim(key string) (done func()) { return f.noteClaimAt(key, time.Time{}) }

// lingerNote removes a claim's note (done, from noteClaim) once
// f.claimLinger has passed: after the CREATE's reply was sent.
func (f *FS) lingerNote(done func()) {
	if f.claimLinger <= 0 {
		done()
		return
	}
	time.AfterFunc(f.claimLinger, done)
}

// noteClaimAt is noteClaim dated at (zero: now).
func (f *FS) noteClaimAt(key string, at time.Time) (done func()) {
	file, err := os.CreateTemp(f.writes.dir, claimNotePrefix+"*")
	if err == nil {
		_, err = file.WriteString(key)
		if cerr := file.Close(); err == nil {
			err = cerr
		}
		if err == nil && !at.IsZero() {
			err = os.Chtimes(file.Name(), at, at)
		}
	}
	if err != nil {
		// Only a takeover in the next instant would miss it.
		klog.InfoS("no note of a claim in flight", "volume", f.cfg.VolumeID, "key", key, "err", err)
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
	keys map[string]func() // guarded by mu: key → removes this process's note of it
}

// readClaimNotes returns the keys of the claim notes in dir younger than
// claimNoteAge, each with its note's time.
func readClaimNotes(dir string, now time.Time) map[string]time.Time {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil
	}
	keys := map[string]time.Time{}
	for _, e := range entries {
		if !strings.HasPrefix(e.Name(), claimNotePrefix) {
			continue
		}
		fi, err := e.Info()
		if err != nil || now.Sub(fi.ModTime()) > claimNoteAge {
			continue
		}
		if b, err := os.ReadFile(filepath.Join(dir, e.Name())); err == nil && len(b) > 0 {
			keys[string(b)] = fi.ModTime()
		}
	}
	return keys
}

// carryClaims notes again every inherited key with its first note's time
// (the staged-writes scan removed the predecessor's notes), for a
// successor of this process.
func (f *FS) carryClaims(inherited map[string]time.Time) {
	f.claims.mu.Lock()
	defer f.claims.mu.Unlock()
	f.claims.keys = make(map[string]func(), len(inherited))
	for key, at := range inherited {
		f.claims.keys[key] = f.noteClaimAt(key, at)
	}
	if len(inherited) > 0 {
		klog.InfoS("exclusive creates in flight at the previous process's death", "volume", f.cfg.VolumeID, "keys", len(inherited))
		time.AfterFunc(claimCarryWindow, f.claims.dropAll)
	}
}

// dropAll forgets the keys no resent CREATE took, and removes their notes.
func (c *inheritedClaims) dropAll() {
	c.mu.Lock()
	defer c.mu.Unlock()
	for key, done := range c.keys {
		done()
		delete(c.keys, key)
	}
}

// take reports whether key was being claimed by a predecessor, once, and
// removes this process's note of it.
func (c *inheritedClaims) take(key string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	done, ok := c.keys[key]
	if !ok {
		return false
	}
	delete(c.keys, key)
	done()
	return true
}

// predecessorsClaim returns the object at key when it is the claim the
// dead predecessor made for a CREATE it never answered: the CREATE of name
// (key's last element) is one the kernel resent, a claim note of key was
// left, and key holds an empty object.
func (f *FS) predecessorsClaim(ctx context.Context, key, name string) (objstore.ObjectInfo, bool) {
	if !f.isResent(takeover.OpCreate, name) || !f.claims.take(key) {
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

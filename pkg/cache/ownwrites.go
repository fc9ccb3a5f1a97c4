package cache

import (
	"slices"
	"strings"
	"time"

	"k8s.io/klog/v2"

	"github.com/basin-csi/basin/pkg/objstore"
)

// This mount's own changes update the cached metadata in place instead of
// dropping it, so that writing many files into a directory costs each file
// its upload only: no listing again after every file, no HEAD before the
// next one.

// ownDirsMax bounds the memory of directories this mount created; past it
// the memory starts over (their absences then count for the negative TTL
// only, as for any other directory).
const ownDirsMax = 1 << 14

// Wrote records that this mount stored info as a whole object (an upload
// it made): its attributes, and, in the cached listing of its directory if
// there is one, the object in place of what the listing said of its key.
// The listing keeps its FetchedAt: what it says of other keys is as old as
// before. Like Invalidate it is persisted at once, so that a crash cannot
// bring back a listing that hides the object.
func (c *Cache) Wrote(info objstore.ObjectInfo) {
	if c.opts.MetadataTTL == 0 || info.Key == "" || c.isClosed.Load() {
		c.Invalidate(info.Key)
		return
	}
	c.recordWritten(info)
	c.persistMeta(info.Key)
}

// recordWritten records info's attributes and puts it into the cached
// listing of its directory, if any, in the overlay (the next flush
// persists them).
func (c *Cache) recordWritten(info objstore.ObjectInfo) {
	c.changed(info.Key)
	c.recordAttr(info, c.opts.Now())
	c.recordObjMeta(info)
	dir := parentPrefix(info.Key)
	l, ok, err := c.cachedListing(dir)
	if err != nil || !ok {
		return
	}
	i, found := slices.BinarySearchFunc(l.Objects, info.Key, func(o objstore.ObjectInfo, k string) int { return strings.Compare(o.Key, k) })
	if found {
		l.Objects[i] = info
	} else {
		l.Objects = slices.Insert(l.Objects, i, info)
	}
	c.setListing(dir, &l)
}

// MadeDir records that this mount created the directory key ("a/b", its
// marker object just stored): an empty listing of "a/b/" as of now, and
// the prefix in the parent's cached listing. Until the metadata TTL
// passes, names absent from the new directory's listing are absent
// without a request (listedAbsent): the directory is this mount's own.
func (c *Cache) MadeDir(key string) {
	if c.opts.MetadataTTL == 0 || key == "" || c.isClosed.Load() {
		c.Invalidate(key)
		return
	}
	c.changed(key)
	now := c.opts.Now()
	c.setListing(key+"/", &Listing{FetchedAt: now})
	parent := parentPrefix(key)
	if l, ok, err := c.cachedListing(parent); err == nil && ok {
		if i, found := slices.BinarySearch(l.Prefixes, key+"/"); !found {
			l.Prefixes = slices.Insert(l.Prefixes, i, key+"/")
			c.setListing(parent, &l)
		}
	}
	c.ownMu.Lock()
	if c.ownDirs == nil || len(c.ownDirs) >= ownDirsMax {
		c.ownDirs = map[string]time.Time{}
	}
	c.ownDirs[key+"/"] = now
	c.ownMu.Unlock()
	c.persistMeta(key)
}

// ownDir reports whether dir ("a/b/") was created by this mount at or
// before its listing was taken: then the listing also stands for absent
// names until the metadata TTL passes.
func (c *Cache) ownDir(dir string, listedAt time.Time) bool {
	c.ownMu.Lock()
	at, ok := c.ownDirs[dir]
	c.ownMu.Unlock()
	return ok && !at.After(listedAt)
}

// Removed records that this mount removed key: the object key it deleted
// (dir false), or the directory key it removed (dir true: rmdir, the
// source of a rename), whether the directory was its own (MadeDir) or
// listed. From now on lookups see the name gone without asking the bucket,
// as they see an upload at once (Wrote): key is absent for the negative
// TTL (forgotten when that is 0), and the cached listing of its directory
// keeps its FetchedAt but no longer holds key as an object (or, for a
// directory, as a prefix). For a directory, what the cache knew of key/ —
// its listing, that this mount made it — is dropped too. A removed file
// keeps a prefix key/ of the same name: a subtree the object hid shows
// again. Persisted at once, like Invalidate.
func (c *Cache) Removed(key string, dir bool) {
	if key == "" || c.isClosed.Load() {
		return
	}
	c.changed(key)
	if c.opts.NegativeMetadataTTL != 0 {
		c.setAttr(key, pendingAttr{kind: attrNegative, rec: attrRecord{FetchedAt: c.opts.Now()}})
	} else {
		c.setAttr(key, pendingAttr{kind: attrDeleted})
	}
	if dir {
		c.changed(key + "/") // a listing of the removed directory under way
		c.setListing(key+"/", nil)
		c.ownMu.Lock()
		delete(c.ownDirs, key+"/")
		c.ownMu.Unlock()
	}
	parent := parentPrefix(key)
	if l, ok, err := c.cachedListing(parent); err == nil && ok {
		l.Objects = slices.DeleteFunc(l.Objects, func(o objstore.ObjectInfo) bool { return o.Key == key })
		if dir {
			l.Prefixes = slices.DeleteFunc(l.Prefixes, func(p string) bool { return p == key+"/" })
		}
		c.setListing(parent, &l)
	}
	c.persistMeta(key)
}

func (c *Cache) persistMeta(key string) {
	if err := c.flushMeta(); err != nil {
		klog.ErrorS(err, "cache: persisting a local change", "volume", c.opts.VolumeID, "key", key)
	}
}

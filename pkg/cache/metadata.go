package cache

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"strings"
	"time"

	bolt "go.etcd.io/bbolt"
	"k8s.io/klog/v2"

	"github.com/basin-csi/basin/pkg/objstore"
)

// Cached metadata (Stat results, "not found" answers, listings) is written
// to an in-memory overlay at once and to the index by the next flush; the
// overlay is consulted first.

type attrKind int

const (
	attrPositive attrKind = iota
	attrNegative
	attrDeleted
	attrObjMeta // an object's user metadata, under objMetaName(key) (objmeta.go)
)

type pendingAttr struct {
	kind attrKind
	rec  attrRecord     // attrPositive; FetchedAt also for attrNegative
	meta *objMetaRecord // attrObjMeta
	gen  uint64
}

type pendingList struct {
	l   *Listing // nil: delete
	gen uint64
}

func (c *Cache) setAttr(key string, p pendingAttr) {
	c.metaMu.Lock()
	c.metaGen++
	p.gen = c.metaGen
	c.attrs[key] = p
	c.metaMu.Unlock()
}

func (c *Cache) setListing(dir string, l *Listing) {
	c.metaMu.Lock()
	c.metaGen++
	c.lists[dir] = pendingList{l: l, gen: c.metaGen}
	c.metaMu.Unlock()
}

// lookupAttr returns the cached entry of key, if any.
func (c *Cache) lookupAttr(key string) (pendingAttr, bool, error) {
	c.metaMu.Lock()
	p, ok := c.attrs[key]
	c.metaMu.Unlock()
	if ok {
		return p, p.kind != attrDeleted, nil
	}
	err := c.ix.view(func(tx *bolt.Tx) error {
		if raw := tx.Bucket(bucketAttrs).Get([]byte(key)); raw != nil {
			r, err := decodeAttr(raw)
			if err != nil {
				return nil // treated as absent
			}
			p, ok = pendingAttr{kind: attrPositive, rec: r}, true
			return nil
		}
		if raw := tx.Bucket(bucketNegative).Get([]byte(key)); raw != nil {
			t, err := decodeNegative(raw)
			if err != nil {
				return nil
			}
			p, ok = pendingAttr{kind: attrNegative, rec: attrRecord{FetchedAt: t}}, true
		}
		return nil
	})
	return p, ok, err
}

// Stat returns the object's attributes: from the index while fresh per
// MetadataTTL, else by a HEAD. A fresh negative entry returns
// objstore.ErrNotFound without a request.
func (c *Cache) Stat(ctx context.Context, key string) (objstore.ObjectInfo, error) {
	if key == "" {
		return objstore.ObjectInfo{}, fmt.Errorf("cache: stat: %w", objstore.ErrInvalidKey)
	}
	if c.isClosed.Load() {
		return objstore.ObjectInfo{}, ErrClosed
	}
	if p, ok, err := c.lookupAttr(key); err != nil {
		return objstore.ObjectInfo{}, err
	} else if ok {
		now := c.opts.Now()
		switch {
		case p.kind == attrPositive && fresh(now, p.rec.FetchedAt, c.opts.MetadataTTL):
			return objstore.ObjectInfo{Key: key, Size: p.rec.Size, Version: p.rec.Version, ModTime: p.rec.ModTime}, nil
		case p.kind == attrNegative && fresh(now, p.rec.FetchedAt, c.opts.NegativeMetadataTTL):
			return objstore.ObjectInfo{}, fmt.Errorf("cache: %q: %w", key, objstore.ErrNotFound)
		}
	}
	if absent, err := c.listedAbsent(key); err != nil {
		return objstore.ObjectInfo{}, err
	} else if absent {
		return objstore.ObjectInfo{}, fmt.Errorf("cache: %q: %w", key, objstore.ErrNotFound)
	}
	return c.statSF.do(ctx, key, func() (objstore.ObjectInfo, error) {
		c.stats.bucketRequests.Add(1)
		fetch := c.beginFetch(key)
		info, err := c.store.Stat(ctx, key)
		now := c.opts.Now()
		switch {
		case c.endFetch(fetch):
			// Answered as of before a change of this mount: not cached.
		case errors.Is(err, objstore.ErrNotFound):
			if c.opts.NegativeMetadataTTL != 0 {
				c.setAttr(key, pendingAttr{kind: attrNegative, rec: attrRecord{FetchedAt: now}})
			}
		case err == nil:
			c.recordAttr(info, now)
			c.recordObjMeta(info)
		}
		return info, err
	})
}

func (c *Cache) recordAttr(info objstore.ObjectInfo, now time.Time) {
	if c.opts.MetadataTTL == 0 {
		return
	}
	c.setAttr(info.Key, pendingAttr{kind: attrPositive, rec: attrRecord{
		Size: info.Size, Version: info.Version, ModTime: info.ModTime, FetchedAt: now}})
}

// List returns the full listing (all pages) of one directory level, from
// the index while fresh, else from the bucket; it also records each
// object's attributes so a following Stat needs no request. An object
// whose key equals dirPrefix (a directory marker) is not listed.
func (c *Cache) List(ctx context.Context, dirPrefix string) (Listing, error) {
	if dirPrefix != "" && !strings.HasSuffix(dirPrefix, "/") {
		return Listing{}, fmt.Errorf("%w: directory prefix %q does not end in /", ErrInvalidArgument, dirPrefix)
	}
	if c.isClosed.Load() {
		return Listing{}, ErrClosed
	}
	if l, ok, err := c.cachedListing(dirPrefix); err != nil {
		return Listing{}, err
	} else if ok && fresh(c.opts.Now(), l.FetchedAt, c.opts.MetadataTTL) {
		return l, nil
	}
	l, err := c.listSF.do(ctx, dirPrefix, func() (Listing, error) {
		var l Listing
		fetch := c.beginFetch(dirPrefix)
		err := objstore.ListAll(ctx, c.store, objstore.ListOptions{Prefix: dirPrefix, Delimiter: "/"}, func(p objstore.ListPage) error {
			c.stats.bucketRequests.Add(1)
			for _, o := range p.Objects {
				if o.Key != dirPrefix && strings.HasPrefix(o.Key, dirPrefix) {
					l.Objects = append(l.Objects, o)
				}
			}
			for _, pre := range p.CommonPrefixes {
				if strings.HasPrefix(pre, dirPrefix) {
					l.Prefixes = append(l.Prefixes, pre)
				}
			}
			return nil
		})
		stale := c.endFetch(fetch)
		if err != nil {
			return Listing{}, fmt.Errorf("cache: list %q: %w", dirPrefix, err)
		}
		l.FetchedAt = c.opts.Now()
		if c.opts.MetadataTTL != 0 && !stale {
			for _, o := range l.Objects {
				c.recordAttr(o, l.FetchedAt)
				c.recordObjMeta(o)
			}
			c.setListing(dirPrefix, &l)
		}
		return l, nil
	})
	if err != nil {
		return Listing{}, err
	}
	// Concurrent callers share l (and the overlay keeps it): each gets
	// its own copy.
	return cloneListing(l), nil
}

func cloneListing(l Listing) Listing {
	return Listing{
		Objects:   append([]objstore.ObjectInfo(nil), l.Objects...),
		Prefixes:  append([]string(nil), l.Prefixes...),
		FetchedAt: l.FetchedAt,
	}
}

// cachedListing returns the stored listing of dir, if any.
func (c *Cache) cachedListing(dir string) (Listing, bool, error) {
	c.metaMu.Lock()
	p, ok := c.lists[dir]
	c.metaMu.Unlock()
	if ok {
		if p.l == nil {
			return Listing{}, false, nil
		}
		return cloneListing(*p.l), true, nil
	}
	var l Listing
	err := c.ix.view(func(tx *bolt.Tx) error {
		raw := tx.Bucket(bucketListings).Get(pathKey(dir))
		if raw == nil {
			return nil
		}
		dl, err := decodeListing(dir, raw)
		if err != nil {
			return nil // treated as absent
		}
		l, ok = dl, true
		return nil
	})
	return l, ok, err
}

// Invalidate forgets key's attributes (positive or negative) and the
// listing of its parent directory, after a local write/unlink/rename.
func (c *Cache) Invalidate(key string) {
	c.invalidate(key)
	// Persist now, not at the next periodic flush: a crash inside that
	// window would bring back the stale listing or negative entry and hide
	// an object the caller has just written (ENOENT after a restart).
	// Invalidations follow uploads and deletes; only the metadata overlay
	// is written, so the commit is cheap.
	if err := c.flushMeta(); err != nil {
		klog.ErrorS(err, "cache: persisting an invalidation", "volume", c.opts.VolumeID, "key", key)
	}
}

// invalidate updates the in-memory overlay only; the next flush persists it.
func (c *Cache) invalidate(key string) {
	c.changed(key)
	if key != "" {
		c.setAttr(key, pendingAttr{kind: attrDeleted})
	}
	c.setListing(parentPrefix(key), nil)
}

// parentPrefix is the directory prefix holding key: "a/b/c" and "a/b/c/"
// are in "a/b/", "a" in "".
func parentPrefix(key string) string {
	key = strings.TrimSuffix(key, "/")
	if i := strings.LastIndexByte(key, '/'); i >= 0 {
		return key[:i+1]
	}
	return ""
}

// pendingMeta snapshots the overlay for a flush.
func (c *Cache) pendingMeta() (map[string]pendingAttr, map[string]pendingList) {
	c.metaMu.Lock()
	defer c.metaMu.Unlock()
	return maps.Clone(c.attrs), maps.Clone(c.lists)
}

// metaFlushed drops overlay entries the flush persisted and nobody changed
// since.
func (c *Cache) metaFlushed(attrs map[string]pendingAttr, lists map[string]pendingList) {
	c.metaMu.Lock()
	defer c.metaMu.Unlock()
	for k, p := range attrs {
		if cur, ok := c.attrs[k]; ok && cur.gen == p.gen {
			delete(c.attrs, k)
		}
	}
	for k, p := range lists {
		if cur, ok := c.lists[k]; ok && cur.gen == p.gen {
			delete(c.lists, k)
		}
	}
}

// writeMeta persists an overlay snapshot.
func writeMeta(tx *bolt.Tx, attrs map[string]pendingAttr, lists map[string]pendingList) error {
	ab, nb, lb := tx.Bucket(bucketAttrs), tx.Bucket(bucketNegative), tx.Bucket(bucketListings)
	for k, p := range attrs {
		key := []byte(k)
		var err error
		switch p.kind {
		case attrObjMeta:
			err = tx.Bucket(bucketObjMeta).Put([]byte(strings.TrimPrefix(k, objMetaPrefix)), encodeObjMeta(*p.meta))
		case attrPositive:
			err = errors.Join(ab.Put(key, encodeAttr(p.rec)), nb.Delete(key))
		case attrNegative:
			err = errors.Join(nb.Put(key, encodeNegative(p.rec.FetchedAt)), ab.Delete(key))
		default:
			err = errors.Join(ab.Delete(key), nb.Delete(key))
		}
		if err != nil {
			return err
		}
	}
	for dir, p := range lists {
		var err error
		if p.l == nil {
			err = lb.Delete(pathKey(dir))
		} else {
			err = lb.Put(pathKey(dir), encodeListing(dir, p.l))
		}
		if err != nil {
			return err
		}
	}
	return nil
}

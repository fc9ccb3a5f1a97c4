package cache

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/basin-csi/basin/pkg/objstore"
)

// primePageKeys is the page a lookup's priming lists: one request for up
// to this many entries of a directory.
const primePageKeys = 1000

// primedMax bounds the memory of primed directories; past it the memory
// starts over (a directory is then listed once more).
const primedMax = 1 << 14

// Prime prepares Stat of keys in the directory dirPrefix ("" or ending in
// "/") for a reader about to open many of them by name, as a training
// job opens its files: one listing page instead of one HEAD per file.
// Unless the directory has a fresh listing or was primed within the
// metadata TTL, it lists one page of it and records every listed object's
// attributes; a page that holds the whole directory becomes its listing,
// which then also answers Stat of absent keys (within the negative TTL),
// and every listed path gets its inode number (numberListed).
// A larger directory keeps its first page's attributes and Stat goes to
// the bucket for the rest. Without attribute caching it does nothing.
func (c *Cache) Prime(ctx context.Context, dirPrefix string) error {
	if dirPrefix != "" && !strings.HasSuffix(dirPrefix, "/") {
		return fmt.Errorf("%w: directory prefix %q does not end in /", ErrInvalidArgument, dirPrefix)
	}
	if c.opts.MetadataTTL == 0 {
		return nil
	}
	if c.isClosed.Load() {
		return ErrClosed
	}
	now := c.opts.Now()
	c.primeMu.Lock()
	at, ok := c.primed[dirPrefix]
	c.primeMu.Unlock()
	if ok && fresh(now, at, c.opts.MetadataTTL) {
		return nil
	}
	if l, ok, err := c.cachedListing(dirPrefix); err != nil {
		return err
	} else if ok && fresh(now, l.FetchedAt, c.opts.MetadataTTL) {
		c.notePrimed(dirPrefix, l.FetchedAt) // the next lookups skip decoding it
		return nil
	}
	_, err := c.primeSF.do(ctx, dirPrefix, func() (Listing, error) {
		c.stats.bucketRequests.Add(1)
		fetch := c.beginFetch(dirPrefix)
		p, err := c.store.List(ctx, objstore.ListOptions{Prefix: dirPrefix, Delimiter: "/", MaxKeys: primePageKeys})
		if c.endFetch(fetch) {
			return Listing{}, nil // answered as of before a change of this mount: not cached
		}
		if err != nil {
			return Listing{}, fmt.Errorf("cache: prime %q: %w", dirPrefix, err)
		}
		l := Listing{FetchedAt: c.opts.Now()}
		for _, o := range p.Objects {
			if o.Key != dirPrefix && strings.HasPrefix(o.Key, dirPrefix) {
				l.Objects = append(l.Objects, o)
				c.recordAttr(o, l.FetchedAt)
				c.recordObjMeta(o)
			}
		}
		for _, pre := range p.CommonPrefixes {
			if strings.HasPrefix(pre, dirPrefix) {
				l.Prefixes = append(l.Prefixes, pre)
			}
		}
		if p.NextToken == "" {
			c.setListing(dirPrefix, &l)
		}
		c.notePrimed(dirPrefix, l.FetchedAt)
		c.numberListed(l)
		return l, nil
	})
	return err
}

// numberListed gives the listed paths their inode numbers in one commit,
// as a readdir does, so that the lookups that follow find them instead of
// committing new numbers one or a few at a time: the commits were 14% of
// the FUSE process's CPU in a cold small-file epoch. A failure leaves
// the numbering to the lookups.
func (c *Cache) numberListed(l Listing) {
	paths := make([]string, 0, len(l.Objects)+len(l.Prefixes))
	for _, o := range l.Objects {
		if checkPath(o.Key) == nil {
			paths = append(paths, o.Key)
		}
	}
	for _, pre := range l.Prefixes {
		if dir := strings.TrimSuffix(pre, "/"); dir != "" && checkPath(dir) == nil {
			paths = append(paths, dir)
		}
	}
	if _, err := c.InodesOf(paths); err != nil && !errors.Is(err, ErrClosed) {
		c.logError(err, "Numbering a listing")
	}
}

// notePrimed remembers that dir's attributes were listed at t.
func (c *Cache) notePrimed(dir string, t time.Time) {
	c.primeMu.Lock()
	defer c.primeMu.Unlock()
	if c.primed == nil || len(c.primed) >= primedMax {
		c.primed = map[string]time.Time{}
	}
	c.primed[dir] = t
}

// listedAbsent reports whether the fresh listing of key's directory shows
// that key is not an object. Absence counts for the shorter of the two
// TTLs: the negative one bounds how long a missing key stays missing —
// except in a directory this mount created (MadeDir), whose listing
// stands for its absent names as long as for its present ones.
func (c *Cache) listedAbsent(key string) (bool, error) {
	l, ok, err := c.cachedListing(parentPrefix(key))
	if err != nil || !ok {
		return false, err
	}
	now := c.opts.Now()
	if !fresh(now, l.FetchedAt, c.opts.MetadataTTL) {
		return false, nil
	}
	if !fresh(now, l.FetchedAt, c.opts.NegativeMetadataTTL) && !c.ownDir(parentPrefix(key), l.FetchedAt) {
		return false, nil
	}
	i := sort.Search(len(l.Objects), func(i int) bool { return l.Objects[i].Key >= key })
	return i == len(l.Objects) || l.Objects[i].Key != key, nil
}

package cache

import "slices"

// A metadata fetch (a listing of a directory, a HEAD of a key) races this
// mount's own changes: the bucket may answer it as of before a change the
// mount made (an upload, a delete, a rename) while the cache records the
// answer after the change, bringing back for the TTL what the change
// replaced — a deleted object, a listing without a new one. So each fetch
// is registered under the name it answers for (the key, or the directory
// prefix), a change marks the fetches running for its key and its
// directory stale, and a stale fetch's answer goes to its caller but is
// not cached.

// metaFetch is one fetch under way; stale is guarded by Cache.metaMu.
type metaFetch struct {
	name  string
	stale bool
}

// beginFetch registers a fetch answering for name.
func (c *Cache) beginFetch(name string) *metaFetch {
	f := &metaFetch{name: name}
	c.metaMu.Lock()
	if c.fetching == nil {
		c.fetching = map[string][]*metaFetch{}
	}
	c.fetching[name] = append(c.fetching[name], f)
	c.metaMu.Unlock()
	return f
}

// endFetch unregisters f and reports whether a change made it stale.
func (c *Cache) endFetch(f *metaFetch) (stale bool) {
	c.metaMu.Lock()
	defer c.metaMu.Unlock()
	fs := slices.DeleteFunc(c.fetching[f.name], func(g *metaFetch) bool { return g == f })
	if len(fs) == 0 {
		delete(c.fetching, f.name)
	} else {
		c.fetching[f.name] = fs
	}
	return f.stale
}

// changed marks stale the fetches under way for key and for its
// directory's listing: the mount has just changed key.
func (c *Cache) changed(key string) {
	c.metaMu.Lock()
	defer c.metaMu.Unlock()
	for _, name := range []string{key, parentPrefix(key)} {
		for _, f := range c.fetching[name] {
			f.stale = true
		}
	}
}

package cache

import "slices"

// KnownDir answers "is key a directory?" from fresh cached listings alone,
// without a request: known is false when no fresh listing tells. key is a
// volume path without trailing slash. A key is a directory when its parent's
// listing has the prefix key+"/" or its own listing has entries; it is not
// one when the parent's fresh listing lacks that prefix.
func (c *Cache) KnownDir(key string) (isDir, known bool) {
	if key == "" || c.isClosed.Load() {
		return key == "", key == ""
	}
	now := c.opts.Now()
	if l, ok, err := c.cachedListing(key + "/"); err == nil && ok && fresh(now, l.FetchedAt, c.opts.MetadataTTL) &&
		(len(l.Objects)+len(l.Prefixes) > 0 || c.ownDir(key+"/", l.FetchedAt)) {
		return true, true
	}
	l, ok, err := c.cachedListing(parentPrefix(key))
	if err != nil || !ok || !fresh(now, l.FetchedAt, c.opts.MetadataTTL) {
		return false, false
	}
	return slices.Contains(l.Prefixes, key+"/"), true
}

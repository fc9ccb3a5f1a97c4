package fuse

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/basin-csi/basin/pkg/cache"
	"github.com/basin-csi/basin/pkg/objstore"
)

// fakeCache is a small, obviously-correct cacheBackend for tests of the file
// system's own logic: TTL'd attributes and listings, an in-memory inode
// table, and whole-object data files (downloaded at open unless noLocal).
type fakeCache struct {
	// constant
	store    objstore.Store
	dataDir  string
	staging  string
	ttl, neg time.Duration
	noLocal  bool // never download: every read goes to the store
	capacity int64

	lists, stats atomic.Int64 // requests made to the store
	inodeBatches atomic.Int64 // InodesOf calls

	mu sync.Mutex
	// guarded by mu
	attrs   map[string]fakeAttr
	listing map[string]cache.Listing
	inodes  map[string]uint64
	next    uint64
}

type fakeAttr struct {
	info  objstore.ObjectInfo
	found bool
	at    time.Time
}

func newFakeCache(store objstore.Store, dir string, ttl, neg time.Duration, noLocal bool) *fakeCache {
	c := &fakeCache{
		store: store, dataDir: filepath.Join(dir, "data"), staging: filepath.Join(dir, "staging"),
		ttl: ttl, neg: neg, noLocal: noLocal, capacity: 1 << 30,
		attrs: map[string]fakeAttr{}, listing: map[string]cache.Listing{},
		inodes: map[string]uint64{"": 1}, next: 2,
	}
	_ = os.MkdirAll(c.dataDir, 0o700)
	_ = os.MkdirAll(c.staging, 0o700)
	_ = os.MkdirAll(c.WritesDir(), 0o700)
	return c
}

func fresh(at time.Time, ttl time.Duration) bool {
	return ttl < 0 || time.Since(at) < ttl
}

func (c *fakeCache) Stat(ctx context.Context, key string) (objstore.ObjectInfo, error) {
	c.mu.Lock()
	a, ok := c.attrs[key]
	c.mu.Unlock()
	if ok && a.found && fresh(a.at, c.ttl) {
		return a.info, nil
	}
	if ok && !a.found && fresh(a.at, c.neg) {
		return objstore.ObjectInfo{}, fmt.Errorf("fake cache: %q: %w", key, objstore.ErrNotFound)
	}
	c.stats.Add(1)
	info, err := c.store.Stat(ctx, key)
	if err != nil && !errors.Is(err, objstore.ErrNotFound) {
		return info, err
	}
	c.mu.Lock()
	c.attrs[key] = fakeAttr{info: info, found: err == nil, at: time.Now()}
	c.mu.Unlock()
	return info, err
}

func (c *fakeCache) List(ctx context.Context, prefix string) (cache.Listing, error) {
	c.mu.Lock()
	l, ok := c.listing[prefix]
	c.mu.Unlock()
	if ok && fresh(l.FetchedAt, c.ttl) {
		return l, nil
	}
	c.lists.Add(1)
	l = cache.Listing{FetchedAt: time.Now()}
	err := objstore.ListAll(ctx, c.store, objstore.ListOptions{Prefix: prefix, Delimiter: "/"}, func(p objstore.ListPage) error {
		l.Objects = append(l.Objects, p.Objects...)
		l.Prefixes = append(l.Prefixes, p.CommonPrefixes...)
		return nil
	})
	if err != nil {
		return cache.Listing{}, err
	}
	c.mu.Lock()
	c.listing[prefix] = l
	for _, o := range l.Objects {
		c.attrs[o.Key] = fakeAttr{info: o, found: true, at: l.FetchedAt}
	}
	c.mu.Unlock()
	return l, nil
}

func parentPrefix(key string) string {
	key = strings.TrimSuffix(key, "/")
	if i := strings.LastIndexByte(key, '/'); i >= 0 {
		return key[:i+1]
	}
	return ""
}

func (c *fakeCache) Invalidate(key string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.attrs, key)
	delete(c.listing, parentPrefix(key))
}

// Wrote and MadeDir forget, as Invalidate does: the fake keeps no
// listings of its own changes.
func (c *fakeCache) Wrote(info objstore.ObjectInfo) { c.Invalidate(info.Key) }

func (c *fakeCache) MadeDir(key string) { c.Invalidate(key) }

// ObjectMetadata keeps nothing: info's own, else a HEAD when probing.
func (c *fakeCache) ObjectMetadata(ctx context.Context, info objstore.ObjectInfo, probe bool) (map[string]string, bool, error) {
	if info.Metadata != nil {
		return info.Metadata, true, nil
	}
	if !probe {
		return nil, false, nil
	}
	fresh, err := c.store.Stat(ctx, info.Key)
	if err != nil {
		return nil, false, err
	}
	return fresh.Metadata, fresh.Version == info.Version, nil
}

// Removed forgets key, and for a directory its listing.
func (c *fakeCache) Removed(key string, dir bool) {
	c.Invalidate(key)
	if dir {
		c.mu.Lock()
		delete(c.listing, key+"/")
		c.mu.Unlock()
	}
}

func (c *fakeCache) InodeOf(p string) (uint64, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if ino, ok := c.inodes[p]; ok {
		return ino, nil
	}
	c.inodes[p] = c.next
	c.next++
	return c.inodes[p], nil
}

func (c *fakeCache) InodesOf(paths []string) ([]uint64, error) {
	c.inodeBatches.Add(1)
	inos := make([]uint64, len(paths))
	for i, p := range paths {
		inos[i], _ = c.InodeOf(p)
	}
	return inos, nil
}

func (c *fakeCache) PathOf(ino uint64) (string, bool) {
	if ino == 1 {
		return "", true
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	for p, i := range c.inodes {
		if i == ino {
			return p, true
		}
	}
	return "", false
}

// Prime does nothing: the fake stats every key in the store.
func (c *fakeCache) Prime(context.Context, string) error { return nil }

func (c *fakeCache) KnownDir(key string) (bool, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	l, ok := c.listing[parentPrefix(key)]
	if !ok || !fresh(l.FetchedAt, c.ttl) {
		return false, false
	}
	return slices.Contains(l.Prefixes, key+"/"), true
}

func (c *fakeCache) RenameInodes(src, dst string) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	moved := map[string]uint64{}
	for p, ino := range c.inodes {
		switch {
		case p == dst || strings.HasPrefix(p, dst+"/"):
			delete(c.inodes, p)
		case p == src || strings.HasPrefix(p, src+"/"):
			moved[dst+p[len(src):]] = ino
			delete(c.inodes, p)
		}
	}
	maps.Copy(c.inodes, moved)
	return nil
}

func (c *fakeCache) dataPath(info objstore.ObjectInfo) string {
	sum := sha256.Sum256([]byte(info.Key + "\x00" + info.Version))
	return filepath.Join(c.dataDir, hex.EncodeToString(sum[:16]))
}

func (c *fakeCache) OpenObject(ctx context.Context, info objstore.ObjectInfo) (objectHandle, error) {
	h := &fakeHandle{c: c, info: info}
	if c.noLocal {
		// Check the version like a real cache would on its first fetch.
		got, err := c.store.Stat(ctx, info.Key)
		if err != nil {
			return nil, err
		}
		if got.Version != info.Version {
			return nil, fmt.Errorf("fake cache: %s changed: %w", info.Key, objstore.ErrPreconditionFailed)
		}
		return h, nil
	}
	p := c.dataPath(info)
	if _, err := os.Stat(p); err == nil {
		h.local = p
		return h, nil
	}
	body, _, err := c.store.Read(ctx, info.Key, objstore.ReadOptions{Length: -1, IfVersion: info.Version})
	if err != nil {
		return nil, err
	}
	defer func() { _ = body.Close() }()
	tmp, err := os.CreateTemp(c.dataDir, "tmp-*")
	if err != nil {
		return nil, err
	}
	if _, err := io.Copy(tmp, body); err != nil {
		_ = tmp.Close()
		_ = os.Remove(tmp.Name())
		return nil, err
	}
	_ = tmp.Close()
	if err := os.Rename(tmp.Name(), p); err != nil {
		return nil, err
	}
	h.local = p
	return h, nil
}

func (c *fakeCache) StagingDir() string { return c.staging }

func (c *fakeCache) WritesDir() string { return filepath.Join(filepath.Dir(c.staging), "writes") }

func (c *fakeCache) Install(_ context.Context, info objstore.ObjectInfo, staged string) error {
	if c.noLocal {
		return os.Remove(staged)
	}
	return os.Rename(staged, c.dataPath(info))
}

func (c *fakeCache) Stats() cache.Stats {
	return cache.Stats{Capacity: c.capacity, UsedBytes: c.capacity / 4, Objects: 10}
}

type fakeHandle struct {
	c     *fakeCache
	info  objstore.ObjectInfo
	local string
	file  *os.File // opened by LocalFile, closed by Close

	prefetches atomic.Int64
}

func (h *fakeHandle) Info() objstore.ObjectInfo { return h.info }

func (h *fakeHandle) ReadAt(ctx context.Context, p []byte, off int64) (int, error) {
	if h.local != "" {
		f, err := os.Open(h.local)
		if err != nil {
			return 0, err
		}
		defer func() { _ = f.Close() }()
		return f.ReadAt(p, off)
	}
	body, _, err := h.c.store.Read(ctx, h.info.Key, objstore.ReadOptions{Offset: off, Length: int64(len(p)), IfVersion: h.info.Version})
	if err != nil {
		return 0, err
	}
	defer func() { _ = body.Close() }()
	n, err := io.ReadFull(body, p)
	if errors.Is(err, io.ErrUnexpectedEOF) {
		err = io.EOF
	}
	return n, err
}

func (h *fakeHandle) Prefetch(off, length int64) { h.prefetches.Add(1) }

func (h *fakeHandle) PrefetchWindow() int64 { return 0 }

func (h *fakeHandle) LocalFile() (*os.File, bool) {
	if h.local == "" {
		return nil, false
	}
	if h.file == nil {
		f, err := os.Open(h.local)
		if err != nil {
			return nil, false
		}
		h.file = f
	}
	return h.file, true
}

func (h *fakeHandle) Close() error {
	if h.file != nil {
		return h.file.Close()
	}
	return nil
}

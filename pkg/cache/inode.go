package cache

import (
	"fmt"
	"maps"
	"strings"
	"sync"

	bolt "go.etcd.io/bbolt"
)

// The inode table gives every volume path a number that stays the same
// across Close/Open, so a FUSE process that takes over a live mount can
// answer the kernel with the inode numbers it already knows.
//
// Numbers come from a range reserved durably in advance (meta "nextino"
// is the end of the reservation), so a number is never handed out twice,
// even across a crash. New path ↔ number pairs are committed before
// InodesOf returns them (concurrent callers share a commit), so a process
// killed right after answering a LOOKUP leaves its successor a number it
// can resolve. Should a commit fail, the pairs stay pending and the
// background loop retries; a pair lost anyway (machine crash) is harmless:
// the path gets a new, higher number and the old one resolves to nothing
// (ESTALE), never to another path.

// inodeReserve is how many numbers one durable reservation covers.
const inodeReserve = 4096

type inodeTable struct {
	// commitMu serializes commits with each other and with RenameInodes:
	// a commit that cloned pairs another commit has since written, and a
	// rename has since moved, would otherwise write the old names back.
	// Lock order: commitMu, then mu, then the index (an ix.update
	// function never takes them: Close holds both around its last one).
	commitMu sync.Mutex
	mu       sync.Mutex
	// guarded by mu
	next     uint64 // next number to hand out
	reserved uint64 // numbers below are reserved durably
	// pending pairs are handed out but not committed yet.
	// INVARIANT: pending and pendingIno are inverse maps.
	pending    map[string]uint64
	pendingIno map[uint64]string
}

// loadInodes starts the table after recovery.
func (c *Cache) loadInodes() error {
	return c.ix.view(func(tx *bolt.Tx) error {
		n := getMetaU64(tx, metaNextIno)
		if n <= rootIno {
			return fmt.Errorf("%w: next inode number %d", ErrCorruptRecord, n)
		}
		c.inodes.next, c.inodes.reserved = n, n
		c.inodes.pending = make(map[string]uint64)
		c.inodes.pendingIno = make(map[uint64]string)
		return nil
	})
}

// InodeOf returns the stable inode number of a volume path (no leading or
// trailing slash; "" is the root, inode 1), allocating one if new. The same
// path keeps its number across Close/Open.
func (c *Cache) InodeOf(path string) (uint64, error) {
	inos, err := c.InodesOf([]string{path})
	if err != nil {
		return 0, err
	}
	return inos[0], nil
}

// InodesOf is InodeOf for many paths, e.g. the entries of a listing.
func (c *Cache) InodesOf(paths []string) ([]uint64, error) {
	for _, p := range paths {
		if err := checkPath(p); err != nil {
			return nil, err
		}
	}
	if c.isClosed.Load() {
		return nil, ErrClosed
	}
	inos := make([]uint64, len(paths))
	missing, err := c.lookupInodes(paths, inos)
	if err != nil || missing == 0 {
		return inos, err
	}

	pending, err := c.assignInodes(paths, inos)
	if err != nil {
		return nil, err
	}
	if !pending {
		return inos, nil
	}
	// Commit before the numbers reach the kernel: a successor process
	// (takeover) must resolve every number the kernel holds. Concurrent
	// callers share commits (each writes all pending pairs; one waits for
	// a commit in flight, which may have written its pairs already).
	if err := c.commitInodes(); err != nil {
		kick(c.inodeKick) // the background loop retries
		return nil, fmt.Errorf("cache: commit inode numbers: %w", err)
	}
	return inos, nil
}

// assignInodes fills the zero entries of inos from the pending pairs, the
// index and, for paths without one, new numbers. It reports whether any
// entry is a pending (not yet committed) pair.
func (c *Cache) assignInodes(paths []string, inos []uint64) (pending bool, err error) {
	t := &c.inodes
	t.mu.Lock()
	defer t.mu.Unlock()
	for i, p := range paths {
		if inos[i] == 0 {
			inos[i] = t.pending[p]
			pending = pending || inos[i] != 0
		}
	}
	// Under t.mu a pair is either pending or committed: look again.
	need, err := c.lookupInodes(paths, inos)
	if err != nil || need == 0 {
		return pending, err
	}
	if t.next+uint64(need) > t.reserved {
		limit := max(t.next+uint64(need), t.reserved) + inodeReserve
		if err := c.ix.update(func(tx *bolt.Tx) error { return putMetaU64(tx, metaNextIno, limit) }); err != nil {
			return false, fmt.Errorf("cache: reserve inode numbers: %w", err)
		}
		t.reserved = limit
	}
	for i, p := range paths {
		if inos[i] != 0 {
			continue
		}
		if ino, ok := t.pending[p]; ok { // the same path twice in paths
			inos[i] = ino
			continue
		}
		inos[i] = t.next
		t.pending[p], t.pendingIno[t.next] = t.next, p
		t.next++
	}
	return true, nil
}

// lookupInodes fills the zero entries of inos from the index and returns
// how many are still zero.
func (c *Cache) lookupInodes(paths []string, inos []uint64) (int, error) {
	missing := 0
	err := c.ix.view(func(tx *bolt.Tx) error {
		b := tx.Bucket(bucketInodes)
		for i, p := range paths {
			if inos[i] != 0 {
				continue
			}
			raw := b.Get(pathKey(p))
			if raw == nil {
				missing++
				continue
			}
			ino, err := getU64(raw)
			if err != nil {
				return err
			}
			inos[i] = ino
		}
		return nil
	})
	return missing, err
}

// PathOf returns the path an inode number was allocated for.
func (c *Cache) PathOf(ino uint64) (string, bool) {
	if ino == rootIno {
		return "", true
	}
	c.inodes.mu.Lock()
	p, ok := c.inodes.pendingIno[ino]
	c.inodes.mu.Unlock()
	if ok {
		return p, true
	}
	_ = c.ix.view(func(tx *bolt.Tx) error {
		if raw := tx.Bucket(bucketPaths).Get(u64(ino)); raw != nil {
			p, ok = string(raw), true
		}
		return nil
	})
	return p, ok
}

// inodeLoop commits new pairs as soon as they appear; pairs arriving
// during a commit share the next one.
func (c *Cache) inodeLoop() {
	defer c.jobs.Done()
	for {
		select {
		case <-c.stop:
			return
		case <-c.inodeKick:
		}
		if err := c.commitInodes(); err != nil {
			c.logError(err, "Committing inode numbers")
		}
	}
}

// commitInodes writes the pending pairs.
func (c *Cache) commitInodes() error {
	t := &c.inodes
	t.commitMu.Lock()
	defer t.commitMu.Unlock()
	t.mu.Lock()
	batch := maps.Clone(t.pending)
	t.mu.Unlock()
	if len(batch) == 0 {
		return nil
	}
	if err := c.ix.update(func(tx *bolt.Tx) error { return putInodes(tx, batch) }); err != nil {
		return err
	}
	t.mu.Lock()
	t.dropPendingLocked(batch)
	t.mu.Unlock()
	return nil
}

// putInodes writes path ↔ number pairs.
func putInodes(tx *bolt.Tx, pairs map[string]uint64) error {
	b, pb := tx.Bucket(bucketInodes), tx.Bucket(bucketPaths)
	for p, ino := range pairs {
		if err := b.Put(pathKey(p), u64(ino)); err != nil {
			return err
		}
		if err := pb.Put(u64(ino), []byte(p)); err != nil {
			return err
		}
	}
	return nil
}

// dropPendingLocked forgets pairs once committed; t.mu is held.
func (t *inodeTable) dropPendingLocked(committed map[string]uint64) {
	for p, ino := range committed {
		delete(t.pending, p)
		delete(t.pendingIno, ino)
	}
}

// releaseInodesLocked gives back the unused part of the reservation at a
// clean Close (after commitInodes), keeping numbers compact. The caller
// holds t.commitMu and t.mu (taken before the transaction: the lock order
// is commitMu, mu, then the index).
func (c *Cache) releaseInodesLocked(tx *bolt.Tx) error {
	t := &c.inodes
	if len(t.pending) != 0 {
		return nil
	}
	t.reserved = t.next
	return putMetaU64(tx, metaNextIno, t.next)
}

func checkPath(p string) error {
	if strings.HasPrefix(p, "/") || strings.HasSuffix(p, "/") || strings.IndexByte(p, 0) >= 0 {
		return fmt.Errorf("%w: path %q", ErrInvalidArgument, p)
	}
	return nil
}

package cache

import (
	"bytes"
	"fmt"
	"maps"

	bolt "go.etcd.io/bbolt"
)

// RenameInodes moves the numbers of src and of every path below it to
// dst, after a rename in the volume: the renamed files keep the numbers
// the kernel knows them by (and a successor process resolves those numbers
// to their new paths), while src, should it be created again, gets a new
// number instead of colliding with the moved file. Numbers of paths dst
// replaced resolve to nothing afterwards. With no number under src it
// does nothing, so that it can be repeated.
func (c *Cache) RenameInodes(src, dst string) error {
	if err := checkPath(src); err != nil || src == "" {
		return fmt.Errorf("%w: rename source %q", ErrInvalidArgument, src)
	}
	if err := checkPath(dst); err != nil || dst == "" {
		return fmt.Errorf("%w: rename target %q", ErrInvalidArgument, dst)
	}
	if c.isClosed.Load() {
		return ErrClosed
	}
	t := &c.inodes
	// No commit runs meanwhile: one that cloned pairs before the move
	// would write the old names back after it.
	t.commitMu.Lock()
	defer t.commitMu.Unlock()
	// No number is handed out meanwhile; those pending are committed in
	// the same transaction, so the move sees every pair.
	t.mu.Lock()
	defer t.mu.Unlock()
	pending := maps.Clone(t.pending)
	err := c.ix.update(func(tx *bolt.Tx) error {
		if err := putInodes(tx, pending); err != nil {
			return err
		}
		b, pb := tx.Bucket(bucketInodes), tx.Bucket(bucketPaths)
		// under calls fn for p and every path below it. ("a-b" sorts
		// between "a" and "a/", hence two lookups.)
		under := func(p string, fn func(path string, ino []byte)) {
			if v := b.Get(pathKey(p)); v != nil {
				fn(p, bytes.Clone(v))
			}
			prefix := pathKey(p + "/")
			cur := b.Cursor()
			for k, v := cur.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix); k, v = cur.Next() {
				fn(string(k[1:]), bytes.Clone(v))
			}
		}
		type pair struct {
			path string
			ino  []byte
		}
		var moved, replaced []pair
		under(src, func(p string, ino []byte) { moved = append(moved, pair{dst + p[len(src):], ino}) })
		if len(moved) == 0 {
			// Nothing numbered under src: the move was made already (a
			// rename the kernel resent to a successor), and dst's numbers
			// are the moved ones.
			return nil
		}
		under(dst, func(p string, ino []byte) { replaced = append(replaced, pair{p, ino}) })
		for _, r := range replaced {
			if err := b.Delete(pathKey(r.path)); err != nil {
				return err
			}
			if err := pb.Delete(r.ino); err != nil {
				return err
			}
		}
		for _, m := range moved {
			if err := b.Delete(pathKey(src + m.path[len(dst):])); err != nil {
				return err
			}
		}
		for _, m := range moved {
			if err := b.Put(pathKey(m.path), m.ino); err != nil {
				return err
			}
			if err := pb.Put(m.ino, []byte(m.path)); err != nil {
				return err
			}
		}
		return nil
	})
	if err == nil {
		t.dropPendingLocked(pending)
	}
	return err
}

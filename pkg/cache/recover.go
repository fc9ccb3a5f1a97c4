package cache

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	bolt "go.etcd.io/bbolt"
	bolterrors "go.etcd.io/bbolt/errors"
	"k8s.io/klog/v2"
)

// Recovery runs in Open. After a clean Close (meta "clean" set, same
// Origin) it only empties the staging directory. Otherwise it walks the
// data directory and the object records: records whose data file is
// missing lose it, blocks beyond a short file are dropped, allocations are
// re-measured, the access-time index is rebuilt from bucketATime, files no
// record names are deleted, and the meta counters are recomputed.

// recoverBatch bounds the changes of one recovery transaction.
const recoverBatch = 10000

func (c *Cache) recover(ctx context.Context) error {
	c.flushMu.Lock()
	defer c.flushMu.Unlock()
	if err := emptyDir(c.stagingDir); err != nil {
		return fmt.Errorf("cache: clean staging: %w", err)
	}
	var (
		clean  bool
		origin string
		used   uint64
		count  uint64
	)
	_ = c.ix.view(func(tx *bolt.Tx) error {
		m := tx.Bucket(bucketMeta)
		clean = m.Get(metaClean) != nil
		origin = string(m.Get(metaOrigin))
		used, count = getMetaU64(tx, metaUsed), getMetaU64(tx, metaObjects)
		return nil
	})
	// A new index has no origin yet: it takes this one.
	moved := origin != c.opts.Origin && (origin != "" || count != 0)
	if !clean || moved {
		klog.InfoS("Recovering cache", "volume", c.opts.VolumeID, "dir", c.dir, "cleanShutdown", clean, "originChanged", moved)
		var err error
		if used, count, err = c.fullRecovery(ctx, moved); err != nil {
			return err
		}
	}
	c.used.Store(int64(used))
	c.objectCount.Store(int64(count))
	// From now on a crash leaves the index marked unclean.
	return c.ix.update(func(tx *bolt.Tx) error {
		m := tx.Bucket(bucketMeta)
		if err := m.Put(metaOrigin, []byte(c.opts.Origin)); err != nil {
			return err
		}
		return m.Delete(metaClean)
	})
}

// emptyDir removes everything inside dir.
func emptyDir(dir string) error {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return err
	}
	for _, e := range ents {
		if err := os.RemoveAll(filepath.Join(dir, e.Name())); err != nil {
			return err
		}
	}
	return nil
}

type dataFile struct {
	path        string
	size, alloc int64
}

// scanData lists the data files by id and deletes anything else in the
// data directory (temporary files, stray names).
func (c *Cache) scanData() (map[objID]dataFile, error) {
	files := make(map[objID]dataFile)
	err := walkData(filepath.Join(c.dir, dataDirName), func(path string, id objID, ok bool, de fs.DirEntry) error {
		if !ok {
			return os.RemoveAll(path)
		}
		if fi, err := de.Info(); err == nil {
			files[id] = dataFile{path: path, size: fi.Size(), alloc: allocated(fi)}
		}
		return nil
	})
	return files, err
}

// fullRecovery reconciles records and data files; wipe drops all cached
// data and metadata first (the Origin changed). It returns the new meta
// counters.
func (c *Cache) fullRecovery(ctx context.Context, wipe bool) (used, count uint64, err error) {
	if wipe {
		if err := c.ix.update(func(tx *bolt.Tx) error {
			for _, b := range [][]byte{bucketObjects, bucketATime, bucketLRU, bucketAttrs, bucketNegative, bucketListings} {
				if err := tx.DeleteBucket(b); err != nil && !errors.Is(err, bolterrors.ErrBucketNotFound) {
					return err
				}
				if _, err := tx.CreateBucket(b); err != nil {
					return err
				}
			}
			return errors.Join(putMetaU64(tx, metaUsed, 0), putMetaU64(tx, metaObjects, 0))
		}); err != nil {
			return 0, 0, fmt.Errorf("cache: wipe index: %w", err)
		}
	}
	files, err := c.scanData()
	if err != nil {
		return 0, 0, fmt.Errorf("cache: scan data: %w", err)
	}

	// Decide each record's fate in a read transaction...
	type fix struct {
		key string
		rec *objRecord // nil: delete
	}
	var fixes []fix
	keep := make(map[objID]bool, len(files))
	err = c.ix.view(func(tx *bolt.Tx) error {
		return tx.Bucket(bucketObjects).ForEach(func(k, v []byte) error {
			if err := ctx.Err(); err != nil {
				return err
			}
			key := string(k)
			rec, err := decodeObject(v)
			if err != nil {
				fixes = append(fixes, fix{key: key})
				return nil
			}
			id := objectID(c.opts.Origin, key, rec.Version, rec.Size)
			f, ok := files[id]
			if !ok {
				fixes = append(fixes, fix{key: key})
				return nil
			}
			changed, any := false, false
			for b := 0; b < numBlocks(rec.Size, rec.BlockSize); b++ {
				if rec.Present[b/64]&(1<<(b%64)) == 0 {
					continue
				}
				if end := min(int64(b+1)*rec.BlockSize, rec.Size); end > f.size {
					rec.Present[b/64] &^= 1 << (b % 64)
					rec.CRCs[b] = 0
					changed = true
					continue
				}
				any = true
			}
			if !any {
				fixes = append(fixes, fix{key: key})
				return nil
			}
			keep[id] = true
			if changed || rec.Alloc != f.alloc {
				rec.Alloc = f.alloc
				fixes = append(fixes, fix{key: key, rec: &rec})
			}
			return nil
		})
	})
	if err != nil {
		return 0, 0, fmt.Errorf("cache: scan index: %w", err)
	}
	// ...then apply the fixes in bounded transactions.
	for len(fixes) > 0 {
		n := min(len(fixes), recoverBatch)
		batch := fixes[:n]
		fixes = fixes[n:]
		if err := c.ix.update(func(tx *bolt.Tx) error {
			for _, f := range batch {
				var err error
				if f.rec == nil {
					err = deleteObject(tx, f.key)
				} else {
					err = putObject(tx, f.key, f.rec)
				}
				if err != nil {
					return err
				}
			}
			return nil
		}); err != nil {
			return 0, 0, fmt.Errorf("cache: repair index: %w", err)
		}
	}
	for id, f := range files {
		if !keep[id] {
			if err := os.Remove(f.path); err != nil && !errors.Is(err, os.ErrNotExist) {
				return 0, 0, fmt.Errorf("cache: remove orphan: %w", err)
			}
		}
	}
	if err := c.ix.update(func(tx *bolt.Tx) error { return rebuildAccounting(tx, c.nowNano()) }); err != nil {
		return 0, 0, fmt.Errorf("cache: rebuild accounting: %w", err)
	}
	err = c.ix.view(func(tx *bolt.Tx) error {
		used, count = getMetaU64(tx, metaUsed), getMetaU64(tx, metaObjects)
		return nil
	})
	return used, count, err
}

// rebuildAccounting recomputes meta used/objects from the records and
// makes bucketATime and bucketLRU describe exactly the records.
func rebuildAccounting(tx *bolt.Tx, now int64) error {
	objs, at := tx.Bucket(bucketObjects), tx.Bucket(bucketATime)
	var used, count uint64
	if err := objs.ForEach(func(_, v []byte) error {
		if h, _, err := decodeObjectHeader(v); err == nil {
			used += uint64(h.Alloc)
		}
		count++
		return nil
	}); err != nil {
		return err
	}
	var stray [][]byte
	times := make(map[string]int64)
	if err := at.ForEach(func(k, v []byte) error {
		t, err := getU64(v)
		if objs.Get(k) == nil || err != nil {
			stray = append(stray, append([]byte(nil), k...))
			return nil
		}
		times[string(k)] = int64(t)
		return nil
	}); err != nil {
		return err
	}
	for _, k := range stray {
		if err := at.Delete(k); err != nil {
			return err
		}
	}
	if err := objs.ForEach(func(k, _ []byte) error {
		if _, ok := times[string(k)]; !ok {
			times[string(k)] = now
			return nil
		}
		return nil
	}); err != nil {
		return err
	}
	if err := tx.DeleteBucket(bucketLRU); err != nil {
		return err
	}
	lru, err := tx.CreateBucket(bucketLRU)
	if err != nil {
		return err
	}
	for k, t := range times {
		if err := at.Put([]byte(k), u64(uint64(t))); err != nil {
			return err
		}
		if err := lru.Put(lruKey(t, k), nil); err != nil {
			return err
		}
	}
	return errors.Join(putMetaU64(tx, metaUsed, used), putMetaU64(tx, metaObjects, count))
}

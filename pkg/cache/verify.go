package cache

import (
	"context"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	bolt "go.etcd.io/bbolt"
)

// Report is what Verify found.
type Report struct {
	// Objects and Blocks count the records and their present blocks.
	Objects, Blocks int64
	// IndexedBytes is meta "used"; FileBytes the allocation of all data
	// files on disk.
	IndexedBytes, FileBytes int64
	// Problems describes every inconsistency; empty means the cache is
	// sound.
	Problems []string
}

func (r *Report) problem(format string, args ...any) {
	r.Problems = append(r.Problems, fmt.Sprintf(format, args...))
}

// Verify checks the cache like fsck, after flushing: every present block's
// bytes match its CRC, every record's data file exists, no data file lacks
// a record, the meta counters equal the records' sums, the access-time
// index mirrors the records, and the inode table is a bijection. Run it on
// a quiescent cache (tests, maintenance): fetches running meanwhile can
// show up as problems. A Report with problems comes with an error wrapping
// ErrInconsistent.
func (c *Cache) Verify(ctx context.Context) (Report, error) {
	if err := c.flush(); err != nil {
		return Report{}, err
	}
	c.flushMu.Lock()
	defer c.flushMu.Unlock()
	var rep Report
	files, err := c.listDataFiles(&rep)
	if err != nil {
		return rep, err
	}
	seen := make(map[objID]bool)
	err = c.ix.view(func(tx *bolt.Tx) error {
		if err := c.verifyObjects(ctx, tx, files, seen, &rep); err != nil {
			return err
		}
		verifyLRU(tx, &rep)
		verifyInodes(tx, &rep)
		return nil
	})
	if err != nil {
		return rep, err
	}
	// Files of in-memory objects not (yet) indexed: detached versions
	// still pinned, objects without present blocks.
	live := make(map[objID]bool)
	c.mu.Lock()
	for _, o := range c.objs {
		live[o.id] = true
	}
	for o := range c.detached {
		live[o.id] = true
	}
	c.mu.Unlock()
	var liveBytes int64
	for id, f := range files {
		rep.FileBytes += f.alloc
		if !seen[id] {
			if live[id] {
				liveBytes += f.alloc
				continue
			}
			rep.problem("orphan data file %s", f.path)
		}
	}
	// Sums of recorded sizes meet the files' allocation within the
	// per-file slack (see allocSlack).
	slack := allocSlack * int64(len(files))
	if used := c.used.Load(); used-rep.FileBytes > slack || rep.FileBytes-used > slack {
		rep.problem("in-memory used %d != data files' allocation %d", used, rep.FileBytes)
	}
	if d := rep.IndexedBytes + liveBytes - rep.FileBytes; d > slack || -d > slack {
		rep.problem("indexed bytes %d + unindexed files %d != data files' allocation %d", rep.IndexedBytes, liveBytes, rep.FileBytes)
	}
	if len(rep.Problems) > 0 {
		return rep, fmt.Errorf("%w: %d problems, first: %s", ErrInconsistent, len(rep.Problems), rep.Problems[0])
	}
	return rep, nil
}

// listDataFiles lists the data files by id, reporting anything else.
func (c *Cache) listDataFiles(rep *Report) (map[objID]dataFile, error) {
	files := make(map[objID]dataFile)
	err := walkData(filepath.Join(c.dir, dataDirName), func(path string, id objID, ok bool, de fs.DirEntry) error {
		fi, err := de.Info()
		if !ok || err != nil {
			rep.problem("stray entry %s in the data directory", path)
			return nil
		}
		files[id] = dataFile{path: path, size: fi.Size(), alloc: allocated(fi)}
		return nil
	})
	return files, err
}

func (c *Cache) verifyObjects(ctx context.Context, tx *bolt.Tx, files map[objID]dataFile, seen map[objID]bool, rep *Report) error {
	// Not a pool buffer: waiting for one while holding flushMu could wait
	// for a block write that waits for flushMu (evictSync).
	var buf []byte
	var sum int64
	err := tx.Bucket(bucketObjects).ForEach(func(k, v []byte) error {
		if err := ctx.Err(); err != nil {
			return err
		}
		key := string(k)
		rec, err := decodeObject(v)
		if err != nil {
			rep.problem("object %q: %v", key, err)
			return nil
		}
		rep.Objects++
		sum += rec.Alloc
		id := objectID(c.opts.Origin, key, rec.Version, rec.Size)
		seen[id] = true
		df, ok := files[id]
		if !ok {
			rep.problem("object %q: data file missing", key)
			return nil
		}
		if d := df.alloc - rec.Alloc; d > allocSlack || d < -allocSlack {
			rep.problem("object %q: record says %d bytes allocated, file has %d", key, rec.Alloc, df.alloc)
		}
		f, err := os.Open(df.path)
		if err != nil {
			rep.problem("object %q: %v", key, err)
			return nil
		}
		defer func() { _ = f.Close() }()
		if int64(len(buf)) < rec.BlockSize {
			buf = make([]byte, rec.BlockSize)
		}
		n := numBlocks(rec.Size, rec.BlockSize)
		any := false
		for b := 0; b < n; b++ {
			if rec.Present[b/64]&(1<<(b%64)) == 0 {
				continue
			}
			any = true
			rep.Blocks++
			l := min(rec.BlockSize, rec.Size-int64(b)*rec.BlockSize)
			if m, _ := f.ReadAt(buf[:l], int64(b)*rec.BlockSize); int64(m) != l {
				rep.problem("object %q block %d: short data file", key, b)
			} else if blockCRC(buf[:l]) != rec.CRCs[b] {
				rep.problem("object %q block %d: checksum mismatch", key, b)
			}
		}
		if !any {
			rep.problem("object %q: record without present blocks", key)
		}
		return nil
	})
	if err != nil {
		return err
	}
	rep.IndexedBytes = int64(getMetaU64(tx, metaUsed))
	if sum != rep.IndexedBytes {
		rep.problem("meta used %d != sum of records %d", rep.IndexedBytes, sum)
	}
	if cnt := int64(getMetaU64(tx, metaObjects)); cnt != rep.Objects {
		rep.problem("meta objects %d != %d records", cnt, rep.Objects)
	}
	return nil
}

func verifyLRU(tx *bolt.Tx, rep *Report) {
	objs, at, lru := tx.Bucket(bucketObjects), tx.Bucket(bucketATime), tx.Bucket(bucketLRU)
	_ = objs.ForEach(func(k, _ []byte) error {
		if at.Get(k) == nil {
			rep.problem("object %q has no access time", k)
		}
		return nil
	})
	n := 0
	_ = at.ForEach(func(k, v []byte) error {
		n++
		t, err := getU64(v)
		if err != nil || objs.Get(k) == nil {
			rep.problem("stray access time for %q", k)
			return nil
		}
		if cur := lru.Cursor(); !keyExists(cur, lruKey(int64(t), string(k))) {
			rep.problem("access time of %q missing from the LRU index", k)
		}
		return nil
	})
	if got := lru.Stats().KeyN; got != n {
		rep.problem("LRU index has %d entries, access times %d", got, n)
	}
}

func keyExists(cur *bolt.Cursor, key []byte) bool {
	k, _ := cur.Seek(key)
	return k != nil && string(k) == string(key)
}

func verifyInodes(tx *bolt.Tx, rep *Report) {
	inodes, paths := tx.Bucket(bucketInodes), tx.Bucket(bucketPaths)
	next := getMetaU64(tx, metaNextIno)
	_ = inodes.ForEach(func(k, v []byte) error {
		ino, err := getU64(v)
		if err != nil || ino >= next || len(k) == 0 {
			rep.problem("bad inode entry %q", k)
			return nil
		}
		if p := paths.Get(v); string(p) != string(k[1:]) {
			rep.problem("inode %d maps back to %q, not %q", ino, p, k[1:])
		}
		return nil
	})
	if a, b := inodes.Stats().KeyN, paths.Stats().KeyN; a != b {
		rep.problem("%d paths but %d inode numbers", a, b)
	}
}

// allocSlack is how far a file's allocated size may drift from the size
// recorded when it was written: the file system may still change st_blocks
// after writeback (ext4 delayed allocation and extent blocks were seen to add
// or drop a 4 KiB block). Accounting errors the cache could make are whole
// cache blocks or pages, far above this.
const allocSlack = 16 << 10

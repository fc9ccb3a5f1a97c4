package cache

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"hash/crc32"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"

	"golang.org/x/sys/unix"
	"k8s.io/klog/v2"

	"github.com/basin-csi/basin/internal/regfile"
)

// The block store: one sparse data file per object version, named from a
// hash, never from the key. Blocks are written with pwrite at their offset
// and checked against their CRC32C before they are served.

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

func blockCRC(p []byte) uint32 { return crc32.Checksum(p, castagnoli) }

// objID names an object version's data file: sha256 over the
// length-prefixed origin, key and version and the size, so no two object
// versions share a name and no key byte reaches the file system.
type objID [sha256.Size]byte

func objectID(origin, key, version string, size int64) objID {
	h := sha256.New()
	var n [binary.MaxVarintLen64]byte
	for _, s := range [...]string{origin, key, version} {
		h.Write(n[:binary.PutUvarint(n[:], uint64(len(s)))])
		h.Write([]byte(s))
	}
	h.Write(n[:binary.PutUvarint(n[:], uint64(size))])
	var id objID
	h.Sum(id[:0])
	return id
}

func (id objID) String() string { return hex.EncodeToString(id[:]) }

// fanout is the length of the data file's directory name: the first hex
// digits of its own name (4096 directories, created on first use; 10^8
// objects are ~24k per directory).
const fanout = 3

// dataRel is the data file's path relative to the cache directory:
// data/<3 hex>/<64 hex>.
func dataRel(id objID) string {
	s := id.String()
	return filepath.Join(dataDirName, s[:fanout], s)
}

// walkData calls fn for every entry of the data directory's two levels:
// with ok set for a data file in its right place (id parsed), else for
// anything else (dir set for a stray directory).
func walkData(root string, fn func(path string, id objID, ok bool, de fs.DirEntry) error) error {
	l1, err := os.ReadDir(root)
	if err != nil {
		return err
	}
	for _, d1 := range l1 {
		p1 := filepath.Join(root, d1.Name())
		if !d1.IsDir() || !isHex(d1.Name(), fanout) {
			if err := fn(p1, objID{}, false, d1); err != nil {
				return err
			}
			continue
		}
		l2, err := os.ReadDir(p1)
		if err != nil {
			return err
		}
		for _, f := range l2 {
			id, ok := parseDataName(f.Name())
			ok = ok && f.Type().IsRegular() && f.Name()[:fanout] == d1.Name()
			if err := fn(filepath.Join(p1, f.Name()), id, ok, f); err != nil {
				return err
			}
		}
	}
	return nil
}

func isHex(s string, n int) bool {
	if len(s) != n {
		return false
	}
	for _, r := range s {
		if (r < '0' || r > '9') && (r < 'a' || r > 'f') {
			return false
		}
	}
	return true
}

// parseDataName returns the id a data file name encodes.
func parseDataName(name string) (objID, bool) {
	var id objID
	if len(name) != 2*len(id) {
		return id, false
	}
	if _, err := hex.Decode(id[:], []byte(name)); err != nil || id.String() != name {
		return id, false
	}
	return id, true
}

// Directory and file names inside a cache directory.
const (
	indexFileName  = "index.db"
	lockFileName   = "LOCK"
	dataDirName    = "data"
	stagingDirName = "staging"
	writesDirName  = "writes"

	dirMode  = 0o700
	fileMode = 0o600
)

// createDataFile opens path for reading and writing, creating it and its
// fan-out directories as needed.
func createDataFile(path string) (*os.File, error) {
	f, err := regfile.Open(path, os.O_RDWR|os.O_CREATE, fileMode)
	if errors.Is(err, os.ErrNotExist) {
		if err := os.MkdirAll(filepath.Dir(path), dirMode); err != nil {
			return nil, fmt.Errorf("cache: create data directory: %w", err)
		}
		f, err = regfile.Open(path, os.O_RDWR|os.O_CREATE, fileMode)
	}
	if err != nil {
		return nil, fmt.Errorf("cache: create data file: %w", err)
	}
	return f, nil
}

// allocated returns the bytes a file occupies on disk.
func allocated(fi os.FileInfo) int64 {
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		return st.Blocks * 512
	}
	return fi.Size()
}

// fileAlloc stats f and returns its size and allocated bytes.
func fileAlloc(f *os.File) (size, alloc int64, err error) {
	fi, err := f.Stat()
	if err != nil {
		return 0, 0, err
	}
	return fi.Size(), allocated(fi), nil
}

// punchHole deallocates [off, off+n) of f, keeping its size.
func punchHole(f *os.File, off, n int64) error {
	rc, err := f.SyscallConn()
	if err != nil {
		return err
	}
	var perr error
	if err := rc.Control(func(fd uintptr) {
		perr = unix.Fallocate(int(fd), unix.FALLOC_FL_PUNCH_HOLE|unix.FALLOC_FL_KEEP_SIZE, off, n)
	}); err != nil {
		return err
	}
	return perr
}

// isNoSpace reports a full disk or exhausted quota.
func isNoSpace(err error) bool {
	return errors.Is(err, syscall.ENOSPC) || errors.Is(err, syscall.EDQUOT)
}

// blockBuf returns a buffer for block b: a pooled block buffer, or for a
// short block a short one (writeback_short.go). bp is what putBuf returns
// to the pool (nil for a plain allocation). It may wait for the pool (see
// get); a short block never waits.
func (c *Cache) blockBuf(o *object, b int) (buf []byte, bp *[]byte) {
	n := o.blockLen(b)
	if n < o.bs/4 {
		buf, bp = c.pool(o.bs).getShort(n)
		return buf, bp
	}
	bp = c.pool(o.bs).get()
	return (*bp)[:n], bp
}

// tryBlockBuf is blockBuf without the wait: false when the pool is
// exhausted.
func (c *Cache) tryBlockBuf(o *object, b int) (buf []byte, bp *[]byte, ok bool) {
	n := o.blockLen(b)
	if n < o.bs/4 {
		buf, bp = c.pool(o.bs).getShort(n)
		return buf, bp, true
	}
	if bp, ok = c.pool(o.bs).tryGet(); !ok {
		return nil, nil, false
	}
	return (*bp)[:n], bp, true
}

func (c *Cache) putBuf(o *object, bp *[]byte) {
	if bp != nil {
		c.pool(o.bs).put(bp)
	}
}

// blockSource is where a stored block came from: a block fetched from the
// bucket is offered to the shared cache tier, one read from the tier is not.
type blockSource bool

const (
	fromBucket blockSource = true
	fromTier   blockSource = false
)

// storeBlock writes a fetched block with its CRC, published on its
// flight, to the data file, offers it to the tier (from the bucket),
// releases one pin of o (the write's) and completes the flight. The offer
// comes first, so that once a reader saw its flights done (a handle's
// Close) the tier counts the upload queued. A block written with O_DIRECT
// keeps its buffer for the reader to come (writeback_kept.go); one that
// cannot be cached keeps its bytes on the flight for its waiters.
func (c *Cache) storeBlock(o *object, b int, f *flight, buf []byte, crc uint32, src blockSource) {
	ok, kept := c.writeBlock(o, b, buf, crc, f)
	switch {
	case kept:
	case ok:
		f.release(c.pool(o.bs))
	default:
		f.abandon(c.pool(o.bs))
		if !f.consumed.Load() {
			o.mu.Lock()
			o.uncached, o.uncachedBlock = f, b
			o.mu.Unlock()
		}
	}
	if src == fromBucket {
		c.offerTier(o, b, crc)
	}
	c.unpin(o)
	c.complete(o, b, f, nil)
}

// writeBlock stores block b and records it present and ready in memory;
// the flusher persists the record after syncing the data. ok is false
// when the block could not be cached (no room, I/O error). A block written
// with O_DIRECT is kept in fl's buffer (kept), before it is marked ready
// so that no reader misses it. Small objects are written through the page
// cache (see writeback.go).
func (c *Cache) writeBlock(o *object, b int, data []byte, crc uint32, fl *flight) (ok, kept bool) {
	n := int64(len(data))
	if !c.admit(n) {
		return false, false
	}
	off := int64(b) * o.bs
	o.mu.Lock()
	o.writes++
	f, err := o.openFileLocked(true)
	var d *os.File
	var derr error
	if err == nil && !o.small {
		d, derr = o.directWriterLocked(f)
	}
	o.mu.Unlock()
	if derr != nil {
		klog.V(2).InfoS("Data file refuses O_DIRECT; writing through the page cache", "volume", c.opts.VolumeID, "err", derr)
	}
	var direct bool
	if err == nil {
		direct, err = c.pwriteBlock(o, f, d, data, off)
		if isNoSpace(err) {
			c.evictSync(n)
			direct, err = c.pwriteBlock(o, f, d, data, off)
		}
	}
	if err != nil {
		c.used.Add(-n)
		if !isNoSpace(err) {
			klog.ErrorS(err, "Writing a cache block", "volume", c.opts.VolumeID)
		}
		if f != nil {
			// Give back what the partial write allocated.
			_ = punchHole(f, off, n)
		}
		o.mu.Lock()
		changed := c.settleWriteLocked(o, 0)
		if changed {
			o.dirty = true
		}
		o.mu.Unlock()
		if changed {
			c.markDirty(o)
		}
		return false, false
	}
	var victims []keptRef
	o.mu.Lock()
	c.settleWriteLocked(o, n)
	o.crcs[b] = crc
	o.present.set(b)
	if direct && fl != nil {
		victims, kept = c.keepLocked(o, b, fl)
	}
	o.ready.set(b)
	o.dirty, o.unsynced = true, true
	o.mu.Unlock()
	c.unkeepAll(victims)
	c.markDirty(o)
	c.kickEvictIfOver()
	return true, kept
}

// settleWriteLocked ends one block write of o whose reservation of n bytes
// (0 if given back) is in used, and reports whether o.alloc changed. While
// other writes of o run, the data file's allocation may already hold their
// blocks, which their reservations count too: the reservation is carried
// until the last write ends and replaces them all with the file's
// allocation. (Settling each write against the file counted such blocks
// twice for a while, and refused blocks that fitted.) The caller holds
// o.mu.
func (c *Cache) settleWriteLocked(o *object, n int64) bool {
	o.writes--
	o.carried += n
	if o.writes > 0 {
		return false
	}
	carried := o.carried
	o.carried = 0
	if f := o.file.Load(); f != nil {
		if _, alloc, err := fileAlloc(f); err == nil {
			c.used.Add(alloc - o.alloc - carried)
			changed := alloc != o.alloc
			o.alloc = alloc
			return changed
		}
	}
	o.alloc += carried
	return carried != 0
}

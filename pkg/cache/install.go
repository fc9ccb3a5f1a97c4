package cache

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"syscall"

	bolt "go.etcd.io/bbolt"
	"golang.org/x/sys/unix"

	"github.com/basin-csi/basin/internal/atomicfile"
	"github.com/basin-csi/basin/internal/directio"
	"github.com/basin-csi/basin/internal/regfile"
	"github.com/basin-csi/basin/pkg/objstore"
)

// Install makes a staged local file the complete cached copy of info (an
// object version just uploaded from it). The file is moved, not copied
// (copied only if it is on another file system). The key's attributes
// become info and its parent listing is forgotten. When eviction cannot
// make room for the file it returns ErrNoSpace and the caller keeps (or
// removes) the staged file; the attributes are updated all the same.
func (c *Cache) Install(ctx context.Context, info objstore.ObjectInfo, stagedPath string) error {
	if info.Key == "" || info.Size < 0 {
		return fmt.Errorf("%w: object %q of size %d", ErrInvalidArgument, info.Key, info.Size)
	}
	if c.isClosed.Load() {
		return ErrClosed
	}
	f, err := os.Open(stagedPath)
	if err != nil {
		return fmt.Errorf("cache: install: %w", err)
	}
	defer func() { _ = f.Close() }()
	fi, err := f.Stat()
	if err != nil {
		return fmt.Errorf("cache: install: %w", err)
	}
	if fi.Size() != info.Size {
		return fmt.Errorf("%w: staged file has %d bytes, object %q has %d", ErrInvalidArgument, fi.Size(), info.Key, info.Size)
	}
	reserved := allocated(fi)
	if !c.reserve(reserved) {
		// The bucket has the data; the cache just keeps the new attributes.
		c.recordWritten(info)
		return fmt.Errorf("%w: installing %d bytes of %q", ErrNoSpace, fi.Size(), info.Key)
	}
	o := newObject(c, info, c.opts.CacheBlockSize)
	if err := c.checksumFile(ctx, o, f); err != nil {
		c.used.Add(-reserved)
		return err
	}
	if err := unix.Fdatasync(int(f.Fd())); err != nil {
		c.used.Add(-reserved)
		return fmt.Errorf("cache: install: sync staged file: %w", err)
	}
	for b := 0; b < o.nblocks; b++ {
		o.present.set(b)
		o.ready.set(b)
	}
	o.dirty = o.nblocks > 0
	o.unsynced = true // the rename
	c.touch(o)

	// Under c.mu so that no eviction of the key's previous record can
	// unlink the file once it is in place.
	c.mu.Lock()
	prevAlloc, err := c.installLocked(ctx, o, stagedPath)
	if err != nil {
		c.mu.Unlock()
		c.used.Add(-reserved)
		return err
	}
	// In-memory objects whose data file the rename replaced must not
	// unlink the new one; their removal still subtracts their allocation.
	replaced := false
	for d := range c.detached {
		replaced = d.takePath(o.id) || replaced
	}
	if old := c.objs[info.Key]; old != nil {
		replaced = old.takePath(o.id) || replaced
		c.detachLocked(old)
	}
	if prevAlloc > 0 && !replaced {
		c.used.Add(-prevAlloc) // the rename replaced a file no object accounts for
	}
	c.dropRecordFileLocked(info.Key, o)
	c.objs[info.Key] = o
	c.idleLocked(o)
	if o.dirty {
		c.dirtyObjs[o] = struct{}{}
	}
	c.used.Add(o.alloc - reserved)
	c.mu.Unlock()

	c.recordWritten(info)
	c.kickEvictIfOver()
	return nil
}

// installLocked moves the staged file into o's place and opens it; it
// returns the allocation of the file the rename replaced (0 if none). The
// caller holds c.mu.
func (c *Cache) installLocked(ctx context.Context, o *object, stagedPath string) (int64, error) {
	if err := c.waitEvictedLocked(ctx, o.info.Key); err != nil {
		return 0, err
	}
	var prev int64
	if fi, err := os.Lstat(o.path); err == nil {
		prev = allocated(fi)
	}
	if err := moveFile(stagedPath, o.path); err != nil {
		return 0, fmt.Errorf("cache: install: %w", err)
	}
	df, err := regfile.Open(o.path, os.O_RDWR, 0)
	if err == nil {
		_ = df.Chmod(fileMode)
		if _, o.alloc, err = fileAlloc(df); err != nil {
			_ = df.Close()
		}
	}
	if err != nil {
		// Leave no unaccounted file behind. (Objects whose file the
		// rename replaced now count bytes that are gone: a rare error
		// path that the next recovery corrects.)
		_ = os.Remove(o.path)
		return 0, fmt.Errorf("cache: install: %w", err)
	}
	o.file.Store(df)
	return prev, nil
}

// directInstallMin is the smallest staged file whose checksums are
// computed from direct reads (directio): a large file just written is
// mostly not in the page cache (the FUSE layer writes streamed files
// directly), and reading it back through the page cache would cost the
// CPU the direct write saved. A small file's pages are still cached, and
// it is read from them.
const directInstallMin = 16 << 20

// checksumFile fills o.crcs from f.
func (c *Cache) checksumFile(ctx context.Context, o *object, f *os.File) error {
	pool := c.pool(o.bs)
	bp := pool.get()
	defer pool.put(bp)
	var d *os.File // f's direct descriptor, while direct reads work
	if o.info.Size >= directInstallMin {
		if dd, err := directio.Reopen(f, os.O_RDONLY); err == nil {
			d = dd
			defer func() { _ = dd.Close() }()
		}
	}
	for b := 0; b < o.nblocks; b++ {
		if err := ctx.Err(); err != nil {
			return err
		}
		off, n := int64(b)*o.bs, o.blockLen(b)
		buf := (*bp)[:n]
		if d != nil && directio.ReadAt(d, *bp, off, n) == nil {
			o.crcs[b] = blockCRC(buf)
			continue
		}
		d = nil
		if _, err := f.ReadAt(buf, off); err != nil {
			return fmt.Errorf("cache: install: read staged file: %w", err)
		}
		o.crcs[b] = blockCRC(buf)
	}
	return nil
}

// dropRecordFileLocked deletes the data file of key's indexed version, if
// it is another one than o's (the flush replaces the record). The caller
// holds c.mu.
func (c *Cache) dropRecordFileLocked(key string, o *object) {
	var (
		h     objRecord
		found bool
	)
	_ = c.ix.view(func(tx *bolt.Tx) error {
		if raw := tx.Bucket(bucketObjects).Get([]byte(key)); raw != nil {
			r, _, err := decodeObjectHeader(raw)
			h, found = r, err == nil
			o.dirty = true
		}
		return nil
	})
	if !found {
		return
	}
	if id := objectID(c.opts.Origin, key, h.Version, h.Size); id != o.id {
		c.unlinkDataLocked(key, id)
	}
}

// moveFile renames src to dst, creating dst's directory; across file
// systems it copies src to dst durably (atomicfile) and removes src.
func moveFile(src, dst string) error {
	if err := os.MkdirAll(filepath.Dir(dst), dirMode); err != nil {
		return err
	}
	err := os.Rename(src, dst)
	if !errors.Is(err, syscall.EXDEV) {
		return err
	}
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer func() { _ = in.Close() }()
	if err := atomicfile.Write(dst, fileMode, atomicfile.Durable, func(w io.Writer) error {
		_, err := io.Copy(w, in)
		return err
	}); err != nil {
		return err
	}
	return os.Remove(src)
}

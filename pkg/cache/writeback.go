package cache

import (
	"bytes"
	"context"
	"errors"
	"hash/crc32"
	"io"
	"os"

	"golang.org/x/sys/unix"
	"k8s.io/klog/v2"

	"github.com/basin-csi/basin/internal/directio"
)

// Write-back of fetched blocks, off the reader's critical path. A fetch
// computes a block's CRC32C piece by piece as its bytes arrive and
// publishes them on the block's flight as soon as the block is complete,
// so waiting readers copy them from memory at once; the write to the data
// file and the in-memory presence record follow in the background, and
// only then does the flight complete.
// The flight stays in the object's inflight map until then, so the block
// still has exactly one flight (no second GET) while it is being written.
//
// Aligned blocks are written with O_DIRECT through a second descriptor of
// the same data file: on this kind of machine a buffered pwrite of a
// block costs several times the CPU of receiving it from the network (page
// allocation, copy, dirty accounting, later writeback), while a direct
// write is a DMA from the fetch buffer. So that readers arriving after the
// write need not read the block back from the disk, its buffer is kept a
// while (writeback_kept.go). Buffers come from a bounded pool
// (writeback_pool.go), which makes fetches wait when writes fall behind.
//
// Small objects (fetched whole) are written through the page cache
// instead: their next open is served by FUSE passthrough from the data
// file, and a direct write would leave that read to the disk. Measured
// with 20,000 cached 128 KiB files read by 8 threads: the first warm pass
// ran at half the rate of the next ones, reading the whole set back from
// the disk. The copy costs little next to a small object's round trip.

// publish makes the block's bytes readable by the flight's waiters before
// they are written to the data file. bp is buf's pooled backing (nil for
// an unpooled buffer).
func (f *flight) publish(buf []byte, bp *[]byte) {
	f.mu.Lock()
	f.buf, f.bp, f.ebuf = buf, bp, nil
	f.mu.Unlock()
	close(f.avail)
}

// showEarly makes the early range of buf readable by the readers that
// asked for it, before the rest of the block arrives.
func (f *flight) showEarly(buf []byte) {
	f.mu.Lock()
	f.ebuf = buf
	f.mu.Unlock()
	close(f.earlyCh)
}

// hideEarly takes the early bytes back before their buffer returns to the
// pool (a failed fetch); readers still copying hold the read lock.
func (f *flight) hideEarly() {
	f.mu.Lock()
	f.ebuf = nil
	f.mu.Unlock()
}

// earlyFor is the channel that tells when the block-relative range [lo,
// hi) can be copied before the whole block arrived, or nil.
func (f *flight) earlyFor(lo, hi int64) <-chan struct{} {
	if f.earlyCh == nil || !f.early.has(lo, hi) {
		return nil
	}
	return f.earlyCh
}

// copyAt copies the published block's bytes from off into p, or, before
// that, p's range from the early bytes; false means the flight holds no
// such bytes (not published yet, or written and released).
func (f *flight) copyAt(p []byte, off int64) (int, bool) {
	f.mu.RLock()
	defer f.mu.RUnlock()
	if f.buf == nil {
		if f.ebuf != nil && f.early.has(off, off+int64(len(p))) {
			return copy(p, f.ebuf[off:]), true
		}
		return 0, false
	}
	return copy(p, f.buf[off:]), true
}

// release returns the published buffer to its pool once the block is in
// the data file; readers still copying hold the read lock until done.
func (f *flight) release(p *bufPool) {
	f.mu.Lock()
	bp := f.bp
	f.buf, f.bp = nil, nil
	f.mu.Unlock()
	if bp != nil {
		p.put(bp)
	}
}

// abandon keeps the published bytes with the flight for good (the block
// could not be cached): as a heap copy, the pool's buffer going back.
func (f *flight) abandon(p *bufPool) {
	f.mu.Lock()
	bp := f.bp
	if bp != nil {
		f.buf, f.bp = bytes.Clone(f.buf), nil
	}
	f.mu.Unlock()
	if bp != nil {
		p.put(bp)
	}
}

// published reports whether f's block arrived (it may not be written yet).
func (f *flight) published() bool {
	select {
	case <-f.avail:
		return true
	default:
		return false
	}
}

// readable reports whether a reader may have copied bytes of f's block:
// the block arrived, or the part its reader asked for did (fetchEarly).
func (f *flight) readable() bool {
	if f.published() {
		return true
	}
	select {
	case <-f.earlyCh: // nil: never
		return true
	default:
		return false
	}
}

// settle waits until the blocks of o that arrived (or whose part a reader
// read early) are written (or ctx ends), so that what was read is cached:
// a Handle closes, LocalPath checks for a complete file.
func (o *object) settle(ctx context.Context) {
	o.mu.Lock()
	var pending []*flight
	for _, f := range o.inflight {
		if f.readable() {
			pending = append(pending, f)
		}
	}
	o.mu.Unlock()
	for _, f := range pending {
		select {
		case <-f.done:
		case <-ctx.Done():
			return
		}
	}
}

// directWriterLocked returns the O_DIRECT descriptor of o's data file f,
// opening it on first use; nil when direct I/O is unavailable (the file
// system refuses it, e.g. ramfs), with the reason the first time. The
// caller holds o.mu.
func (o *object) directWriterLocked(f *os.File) (*os.File, error) {
	if o.noDirect {
		return nil, nil
	}
	if d := o.direct.Load(); d != nil {
		return d, nil
	}
	// Reopen the descriptor's own inode (never the path: an install may
	// have put another file there) for writing, with O_DIRECT.
	d, err := directio.Reopen(f, os.O_WRONLY)
	if err != nil {
		o.noDirect = true
		return nil, err
	}
	o.direct.Store(d)
	return d, nil
}

// closeDirect closes o's O_DIRECT descriptor, if open. No write may be
// running: o is unpinned (its last pin just went) or unreachable.
func (o *object) closeDirect() {
	if d := o.direct.Swap(nil); d != nil {
		_ = d.Close()
	}
}

// pwriteBlock writes data at off through o's direct descriptor d when it
// can, else (or when the direct write is refused) through f. direct
// reports a direct write: its bytes are not in the page cache.
func (c *Cache) pwriteBlock(o *object, f, d *os.File, data []byte, off int64) (direct bool, err error) {
	if d != nil && directio.OK(data, off) {
		_, err := d.WriteAt(data, off)
		if !errors.Is(err, unix.EINVAL) {
			return true, err
		}
		klog.V(2).InfoS("Direct write refused; writing through the page cache", "volume", c.opts.VolumeID, "err", err)
		o.mu.Lock()
		o.noDirect = true // the descriptor stays open until the last pin goes
		o.mu.Unlock()
	}
	_, err = f.WriteAt(data, off)
	return false, err
}

// readChunk is the most readBlock asks of one Read: small enough that the
// piece is still in the CPU's cache when its CRC is computed (a second
// pass over a 4 MiB block, or over a piece of several MiB, reads it back
// from memory, which costs as much as receiving it).
const readChunk = 64 << 10

// readBlock fills buf from r and returns its CRC32C, computed piece by
// piece right after each piece arrived.
func readBlock(r io.Reader, buf []byte) (uint32, error) {
	var crc uint32
	for n := 0; n < len(buf); {
		m, err := r.Read(buf[n:min(len(buf), n+readChunk)])
		crc = crc32.Update(crc, castagnoli, buf[n:n+m])
		n += m
		switch {
		case n == len(buf):
			return crc, nil
		case err == io.EOF:
			return crc, io.ErrUnexpectedEOF
		case err != nil:
			return crc, err
		}
	}
	return crc, nil
}

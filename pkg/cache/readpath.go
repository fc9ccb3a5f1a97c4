package cache

import (
	"context"
	"fmt"
)

// The read path past the lock-free hit (Handle.ReadAt): blocks being
// fetched are copied from their flight's buffer as soon as they arrived,
// ready blocks from their kept buffer (writeback_kept.go) or the data file.

// readSlow serves a read that touches blocks not ready yet.
func (c *Cache) readSlow(ctx context.Context, o *object, p []byte, off int64) (int, error) {
	end := off + int64(len(p))
	b0 := int(off / o.bs)
	flights := c.acquireRead(o, off, end)
	n := 0
	hit := true // no block had to wait for the bucket
	for i, f := range flights {
		b := b0 + i
		start := int64(b) * o.bs
		lo, hi := max(off, start), min(end, start+o.bs)
		seg := p[lo-off : hi-off]
		if f != nil {
			// The bytes are in the flight's buffer from when the GET
			// delivered them (the part this read asked for first, when
			// the fetch is for it) until the block is written.
			early := f.earlyFor(lo-start, hi-start)
			select {
			case <-f.avail:
			case <-f.done:
			case <-early:
			default:
				hit = false
				select {
				case <-f.avail:
				case <-f.done:
				case <-early:
				case <-ctx.Done():
					return n, ctx.Err()
				}
			}
			if m, ok := f.copyAt(seg, lo-start); ok {
				n += m
				if hi == start+o.blockLen(b) {
					c.readToEnd(o, b, f)
				}
				continue
			}
			select {
			case <-f.done:
			case <-ctx.Done():
				return n, ctx.Err()
			}
			if f.err != nil {
				return n, f.err
			}
			if m, ok := f.copyAt(seg, lo-start); ok {
				n += m // fetched but not cached
				if hi == start+o.blockLen(b) {
					c.readToEnd(o, b, f)
				}
				continue
			}
		}
		m, err := c.copyReady(o, b, seg, lo)
		n += m
		if err != nil {
			return n, err
		}
	}
	if hit {
		c.stats.hits.Add(1)
		c.stats.hitBytes.Add(int64(n))
		c.touch(o)
		return n, nil
	}
	c.stats.misses.Add(1)
	c.stats.missBytes.Add(int64(n))
	c.touch(o)
	return n, nil
}

// readToEnd records that a read copied block b from f's buffer to the
// block's end: its buffer need not be kept after the write, nor its bytes
// after a write that could not store it.
func (c *Cache) readToEnd(o *object, b int, f *flight) {
	f.consumed.Store(true)
	o.unkeep(b, f, c.pool(o.bs))
	o.forgetUncached(f)
}

// readReady reads p at off, all of it in ready blocks: kept bytes from
// memory, the rest from the data file.
func (c *Cache) readReady(o *object, p []byte, off int64) (int, error) {
	end := off + int64(len(p))
	n := 0
	for b := int(off / o.bs); n < len(p); b++ {
		lo, hi := max(off, int64(b)*o.bs), min(end, int64(b+1)*o.bs)
		m, err := c.copyReady(o, b, p[lo-off:hi-off], lo)
		n += m
		if err != nil {
			return n, err
		}
	}
	return n, nil
}

// copyReady reads seg at lo from ready block b: from its kept buffer when
// there is one (dropped once a read reaches the end of the block), else
// from the data file.
func (c *Cache) copyReady(o *object, b int, seg []byte, lo int64) (int, error) {
	start := int64(b) * o.bs
	if f := o.keptFlight(b); f != nil {
		if m, ok := f.copyAt(seg, lo-start); ok {
			if lo+int64(m) == start+o.blockLen(b) {
				o.unkeep(b, f, c.pool(o.bs))
			}
			return m, nil
		}
	}
	file := o.file.Load()
	if file == nil {
		return 0, fmt.Errorf("cache: block %d of %q has no data file", b, o.info.Key)
	}
	m, err := file.ReadAt(seg, lo)
	if err != nil {
		err = fmt.Errorf("cache: read data file: %w", err)
	}
	return m, err
}

package cache

import (
	"os"

	"github.com/basin-csi/basin/pkg/cache/tier"
)

// The shared cache tier (Options.Tier) sits between the data files and
// the bucket: a job first asks the tier for its blocks (fetchTier), and
// the blocks it then fetches from the bucket are offered to the tier
// (offerTier). A small object is one tier object, fetched and filled
// whole; a large object's blocks are one tier object each. The version
// that names the tier objects is o's, from this volume's own listing or
// HEAD: the tier is asked only for versions the volume could see.

// tierID is the identity of the run of n blocks of o from b0.
func (c *Cache) tierID(o *object, b0, n int) tier.Identity {
	return tier.Identity{Origin: c.opts.Origin, Key: o.info.Key, Version: o.info.Version, Size: o.info.Size,
		BlockSize: o.bs, First: b0, Blocks: n}
}

// tierFor reports whether the tier may serve and store o's blocks.
func (c *Cache) tierFor(o *object) bool {
	return c.opts.Tier != nil && o.info.Version != "" && o.info.Size > 0
}

// fetchTier makes ready the blocks of j the tier holds, from the first
// on, and returns the job of the rest (from the first block the tier did
// not have), which holds j's pin; when the tier had them all it returns
// an empty job and the pin is released. A small object's job is served
// only whole.
func (c *Cache) fetchTier(o *object, j job) job {
	if !c.tierFor(o) {
		return j
	}
	if o.small {
		if j.b0 != 0 || j.b1 != o.nblocks-1 {
			return j
		}
		return c.fetchTierWhole(o, j)
	}
	for len(j.flights) > 0 {
		b, f := j.b0, j.flights[0]
		buf, bp := c.blockBuf(o, b)
		crcs, stale, ok := c.opts.Tier.Get(c.ctx, c.tierID(o, b, 1), [][]byte{buf})
		if !ok {
			c.putBuf(o, bp)
			return j
		}
		f.publish(buf, bp)
		j = job{b0: b + 1, b1: j.b1, flights: j.flights[1:]}
		if len(j.flights) > 0 {
			o.addPin() // the write's own; the last one takes the job's
		}
		c.storeBlock(o, b, f, buf, crcs[0], fromTier)
		if stale {
			c.sendTier(o, b, 1, crcs, true)
		}
	}
	return j
}

// fetchTierWhole serves a small object's job (all its blocks) from its
// one tier object, or returns j untouched.
func (c *Cache) fetchTierWhole(o *object, j job) job {
	bufs := make([][]byte, len(j.flights))
	bps := make([]*[]byte, len(j.flights))
	defer func() {
		for _, bp := range bps {
			c.putBuf(o, bp)
		}
	}()
	for i := range j.flights {
		// No wait for the pool while holding buffers: another job
		// holding the rest could wait for ours.
		buf, bp, ok := c.tryBlockBuf(o, j.b0+i)
		if !ok {
			return j
		}
		bufs[i], bps[i] = buf, bp
	}
	crcs, stale, ok := c.opts.Tier.Get(c.ctx, c.tierID(o, 0, o.nblocks), bufs)
	if !ok {
		return j
	}
	if stale {
		defer c.sendTier(o, 0, o.nblocks, crcs, true) // after the blocks are stored
	}
	for i, f := range j.flights {
		f.publish(bufs[i], bps[i])
		bps[i] = nil // the flight's now
		if i < len(j.flights)-1 {
			o.addPin()
		}
		c.storeBlock(o, j.b0+i, f, bufs[i], crcs[i], fromTier)
	}
	return job{}
}

// offerTier offers block b of o, fetched from the bucket and just written
// by storeBlock (crc its CRC32C), to the tier: a large object's block
// once it is in the data file; a small object whole, once its last block
// is. The upload reads the bytes back from the data file later (and
// checks them against the CRC32Cs), so the queue holds no block in
// memory and a reader never waits for it. A block the cache could not
// store is not offered.
func (c *Cache) offerTier(o *object, b int, crc uint32) {
	if !c.tierFor(o) {
		return
	}
	first, n := b, 1
	crcs := []uint32{crc}
	if o.small {
		first, n = 0, o.nblocks
	}
	o.mu.Lock()
	for i := first; i < first+n; i++ {
		if !o.present.has(i) {
			o.mu.Unlock()
			return // not stored, or (small) another block still coming
		}
	}
	if o.small {
		crcs = append([]uint32(nil), o.crcs[:n]...)
	}
	o.mu.Unlock()
	if o.small && !o.tierOffered.CompareAndSwap(false, true) {
		return
	}
	c.sendTier(o, first, n, crcs, false)
}

// sendTier queues the upload of o's blocks [first, first+n) (crcs their
// CRC32Cs), read back from the data file when an uploader takes them: an
// offer of blocks fetched from the bucket, or (refresh) a tier object a
// hit found stale, stored again to renew its age.
func (c *Cache) sendTier(o *object, first, n int, crcs []uint32, refresh bool) {
	path, off := o.path, int64(first)*o.bs
	read := func(buf []byte) error {
		f, err := os.Open(path)
		if err != nil {
			return err
		}
		defer func() { _ = f.Close() }()
		_, err = f.ReadAt(buf, off)
		return err
	}
	if refresh {
		c.opts.Tier.Refresh(c.tierID(o, first, n), crcs, read)
		return
	}
	c.opts.Tier.Offer(c.tierID(o, first, n), crcs, read)
}

package cache

import (
	"errors"
	"fmt"
	"io"
	"sync"

	"k8s.io/klog/v2"

	"github.com/basin-csi/basin/pkg/objstore"
)

// A job makes blocks [b0, b1] of one object ready: a verification of a
// block recorded present (falling back to a fetch on a bad CRC or short
// file), or a fetch of missing blocks with one ranged GET (several
// parallel GETs when a block is larger than PartSize). Each block has its
// own flight, so readers of the first block of a long GET go on as soon as
// it is stored.
type job struct {
	verify  bool
	b0, b1  int
	flights []*flight
}

// early reports whether j fetches one block for a reader that asked for
// part of it (fetchEarly).
func (j job) early() bool {
	return !j.verify && len(j.flights) == 1 && j.flights[0].earlyCh != nil
}

// fetchFor says whom the flights acquire starts are for, which decides
// whether a fetched block's buffer is kept after its write
// (writeback_kept.go).
type fetchFor uint8

const (
	// forRead: a reader waits for the block now (a random reader, the
	// first block of a stream, a verification). It copies its bytes from
	// the flight's buffer, so keeping the buffer after the write would
	// only serve a later read of the rest of the block, which a random
	// reader may never make.
	forRead fetchFor = iota
	// forAhead: read-ahead of a sequential reader, or a directory
	// prefetch; the reader comes after the write, so the buffer is kept
	// for it.
	forAhead
)

// acquire returns, for each block of [b0, b1], nil if it is ready or the
// flight that makes it ready, starting jobs for blocks nobody works on.
// A miss on a small object fetches all its missing blocks in one GET.
// New flights are for why.
func (c *Cache) acquire(o *object, b0, b1 int, why fetchFor) []*flight {
	return c.acquireSpan(o, b0, b1, why, 0, 0)
}

// acquireRead is acquire for a reader of [off, end) that waits for it
// now. A block of a large object it needs only part of is fetched by a
// job of its own, the part first (fetchEarly), so that the reader waits
// for its bytes and not for the whole block.
func (c *Cache) acquireRead(o *object, off, end int64) []*flight {
	return c.acquireSpan(o, int(off/o.bs), int((end-1)/o.bs), forRead, off, end)
}

// acquireSpan is acquire; [off, end), when not empty, is what the reader
// asked for (acquireRead).
func (c *Cache) acquireSpan(o *object, b0, b1 int, why fetchFor, off, end int64) []*flight {
	out := make([]*flight, b1-b0+1)
	lo, hi := b0, b1
	if o.small {
		lo, hi = 0, o.nblocks-1
	}
	perJob := 1
	if !o.small && c.opts.PartSize > o.bs {
		perJob = int(c.opts.PartSize / o.bs)
	}
	// A verification job checks a run of present blocks one after the
	// other with one buffer; verifySem bounds how many run at once.
	perVerify := max(1, int(verifyRunBytes/o.bs))
	var (
		jobs []job
		run  *job
	)
	endRun := func() {
		if run != nil {
			jobs = append(jobs, *run)
			run = nil
		}
	}
	o.mu.Lock()
	for b := lo; b <= hi; b++ {
		if o.ready.has(b) {
			endRun()
			continue
		}
		f := o.inflight[b]
		if f == nil && o.uncached != nil && o.uncachedBlock == b {
			f = o.uncached // completed; its bytes stay on it
			endRun()
		} else if f == nil {
			f = newFlight(why)
			o.inflight[b] = f
			if e, ok := c.earlySpan(o, b, off, end); ok && !o.present.has(b) {
				f.early, f.earlyCh = e, make(chan struct{})
				endRun()
				jobs = append(jobs, job{b0: b, b1: b, flights: []*flight{f}})
				out[b-b0] = f
				continue
			}
			switch {
			case o.present.has(b):
				if run == nil || !run.verify || b-run.b0 >= perVerify {
					endRun()
					run = &job{verify: true, b0: b, b1: b, flights: []*flight{f}}
				} else {
					run.b1 = b
					run.flights = append(run.flights, f)
				}
			case run != nil && run.verify:
				endRun()
				run = &job{b0: b, b1: b, flights: []*flight{f}}
			case run != nil && (o.small || b-run.b0 < perJob):
				run.b1 = b
				run.flights = append(run.flights, f)
			default:
				endRun()
				run = &job{b0: b, b1: b, flights: []*flight{f}}
			}
		} else {
			endRun()
		}
		if b >= b0 && b <= b1 {
			out[b-b0] = f
		}
	}
	endRun()
	o.pins += len(jobs)
	o.mu.Unlock()
	for _, j := range jobs {
		if !c.goJob(func() { c.runJob(o, j) }) {
			for i, f := range j.flights {
				c.complete(o, j.b0+i, f, ErrClosed)
			}
			c.unpin(o)
		}
	}
	return out
}

// earlySpan is the block-relative part of block b that a reader of [off,
// end) asks for, when the block is worth fetching part first: a block of a
// large object fetched with one GET (fetchRange's), of which the reader
// needs less than the whole.
func (c *Cache) earlySpan(o *object, b int, off, end int64) (span, bool) {
	if end <= off || o.small || o.bs > c.opts.PartSize {
		return span{}, false
	}
	start, n := int64(b)*o.bs, o.blockLen(b)
	e := span{lo: max(off, start) - start, hi: min(end, start+n) - start}
	if e.hi <= e.lo || e.lo == 0 && e.hi == n {
		return span{}, false
	}
	return e, true
}

// complete ends a block's flight.
func (c *Cache) complete(o *object, b int, f *flight, err error) {
	f.err = err
	o.mu.Lock()
	if o.inflight[b] == f {
		delete(o.inflight, b)
	}
	o.mu.Unlock()
	close(f.done)
}

// runJob runs a job holding one pin of o, which it releases.
func (c *Cache) runJob(o *object, j job) {
	if !j.verify {
		c.fetch(o, j)
		return
	}
	defer c.unpin(o)
	for _, b := range c.verifyRun(o, j) {
		o.addPin()
		c.fetch(o, job{b0: b, b1: b, flights: []*flight{j.flights[b-j.b0]}})
	}
}

// fetch fetches the blocks of j, consuming one pin of o: the write of the
// last block releases it just before completing its flight, so a reader
// that saw every flight it waited for done also sees the fetch unpinned.
func (c *Cache) fetch(o *object, j job) {
	if j = c.fetchTier(o, j); len(j.flights) == 0 {
		return
	}
	switch {
	case j.early():
		c.fetchEarly(o, j)
	case !o.small && o.blockLen(j.b0) > c.opts.PartSize:
		c.fetchParts(o, j)
	default:
		c.fetchRange(o, j)
	}
}

// verifyRunBytes caps the blocks one verification job checks in a row, so
// that a reader waiting for a block of a large object being verified does
// not wait for all of it.
const verifyRunBytes = 32 << 20

// verifyRun checks the present blocks of j one after the other with one
// pooled buffer, holding one of verifySem's slots, so verifying a large
// object (LocalPath after a restart) holds at most verifyParallel block
// buffers in all. It completes the flights of good blocks and returns the
// blocks that failed and must be fetched. When the cache closes it fails
// the remaining flights with ErrClosed.
func (c *Cache) verifyRun(o *object, j job) (bad []int) {
	select {
	case c.verifySem <- struct{}{}:
	case <-c.ctx.Done():
		c.failFrom(o, j, 0, ErrClosed)
		return nil
	}
	bp := c.pool(o.bs).get()
	c.stats.verifyBufs.enter()
	defer func() {
		c.stats.verifyBufs.leave()
		c.pool(o.bs).put(bp)
		<-c.verifySem
	}()
	for i, f := range j.flights {
		if c.ctx.Err() != nil {
			c.failFrom(o, j, i, ErrClosed)
			for _, b := range bad {
				c.complete(o, b, j.flights[b-j.b0], ErrClosed)
			}
			return nil
		}
		b := j.b0 + i
		if c.verifyBlock(o, b, (*bp)[:o.blockLen(b)]) {
			c.complete(o, b, f, nil)
		} else {
			bad = append(bad, b)
		}
	}
	return bad
}

// verifyBlock checks a present block against its CRC, reading it into buf
// (of the block's length), and marks it ready; a mismatch or short file
// drops the block.
func (c *Cache) verifyBlock(o *object, b int, buf []byte) bool {
	ok := false
	if f := o.file.Load(); f != nil {
		if m, _ := f.ReadAt(buf, int64(b)*o.bs); m == len(buf) {
			crc := blockCRC(buf)
			o.mu.Lock()
			ok = o.present.has(b) && o.crcs[b] == crc
			o.mu.Unlock()
		}
	}
	if ok {
		o.ready.set(b)
		return true
	}
	klog.V(2).InfoS("Cached block failed verification; refetching", "volume", c.opts.VolumeID, "key", o.info.Key, "block", b)
	o.mu.Lock()
	o.dropBlockLocked(b)
	o.mu.Unlock()
	c.markDirty(o)
	return false
}

// read opens a ranged GET of o's version, counted and bounded by the
// fetch slots (an object being prefetched by the prefetcher's own).
func (c *Cache) read(o *object, off, length int64) (io.ReadCloser, error) {
	body := &slotBody{o: o, bytes: &c.stats.bucketBytes}
	if sem := c.prefetchSem(o); sem != nil {
		select {
		case sem <- struct{}{}:
			body.sem = sem
		case <-c.ctx.Done():
			return nil, ErrClosed
		}
	} else if err := c.fetches.acquire(c.ctx, o); err != nil {
		return nil, ErrClosed
	} else {
		body.slots = c.fetches
	}
	rc, err := c.openRange(o, off, length)
	if err != nil {
		body.release()
		return nil, err
	}
	body.ReadCloser = rc
	return body, nil
}

// openRange sends a ranged GET of o's version, counted.
func (c *Cache) openRange(o *object, off, length int64) (io.ReadCloser, error) {
	c.stats.bucketRequests.Add(1)
	rc, info, err := c.store.Read(c.ctx, o.info.Key, objstore.ReadOptions{Offset: off, Length: length, IfVersion: o.info.Version})
	if err == nil && info.Version != "" && o.info.Version != "" && (info.Version != o.info.Version || info.Size != o.info.Size) {
		_ = rc.Close()
		err = fmt.Errorf("cache: %q is now version %s: %w", o.info.Key, info.Version, objstore.ErrPreconditionFailed)
	}
	if err != nil {
		if errors.Is(err, objstore.ErrPreconditionFailed) {
			c.versionMoved(o)
		}
		if c.ctx.Err() != nil {
			return nil, ErrClosed
		}
		return nil, fmt.Errorf("cache: fetch %q: %w", o.info.Key, err)
	}
	return rc, nil
}

// slotBody releases the fetch slot when closed and counts bytes. At most
// one of slots (a foreground GET, whose bytes the fetch tuner measures)
// and sem (a prefetch's) is set; neither for readFull's.
type slotBody struct {
	io.ReadCloser
	slots *fetchSlots
	sem   chan struct{}
	o     *object
	bytes interface{ Add(int64) int64 }
	once  sync.Once
}

func (b *slotBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	b.bytes.Add(int64(n))
	if b.slots != nil {
		b.slots.addReceived(n)
	}
	return n, err
}

func (b *slotBody) Close() error {
	err := b.ReadCloser.Close()
	b.release()
	return err
}

// release gives the slot back, once.
func (b *slotBody) release() {
	b.once.Do(func() {
		switch {
		case b.sem != nil:
			<-b.sem
		case b.slots != nil:
			b.slots.release(b.o)
		}
	})
}

// fetchRange fetches blocks [b0, b1] with one GET. Each block is
// published to its readers as soon as its bytes arrived and written to
// the data file in the background while the GET goes on; the job ends
// (and unpins the object) when the writes are done.
//
// Fetch slots and pool buffers are taken in one order per block size, so
// that no holder of one waits for a holder of the other. Blocks up to
// PartSize: slot (the open GET), then buffers; waiting for a buffer with
// the GET open makes the fetch follow the disk's pace. Larger blocks
// (bufferFirst): fetchParts holds a buffer while its parts wait for slots,
// so a ranged fetch takes each buffer before it opens the GET and, when
// the pool runs dry mid-GET, closes the GET while it waits and goes on
// with a new one.
func (c *Cache) fetchRange(o *object, j job) {
	end := min(o.info.Size, int64(j.b1+1)*o.bs)
	bufferFirst := o.bs > c.opts.PartSize
	var (
		rc     io.ReadCloser
		writes sync.WaitGroup
	)
	defer writes.Wait()
	defer func() { // frees the fetch slot before waiting for the writes
		if rc != nil {
			_ = rc.Close()
		}
	}()
	open := func(b int) (err error) {
		rc, err = c.read(o, int64(b)*o.bs, end-int64(b)*o.bs)
		return err
	}
	fail := func(i int, bp *[]byte, err error) {
		c.putBuf(o, bp)
		c.failFrom(o, j, i, err)
		c.unpin(o)
	}
	for i, f := range j.flights {
		b := j.b0 + i
		if rc == nil && !bufferFirst {
			if err := open(b); err != nil {
				fail(i, nil, err)
				return
			}
		}
		buf, bp, ok := c.tryBlockBuf(o, b)
		if !ok {
			if bufferFirst && rc != nil {
				_ = rc.Close()
				rc = nil
			}
			buf, bp = c.blockBuf(o, b)
		}
		if rc == nil {
			if err := open(b); err != nil {
				fail(i, bp, err)
				return
			}
		}
		crc, err := readBlock(rc, buf)
		if err != nil {
			fail(i, bp, fetchErr(c, o, err))
			return
		}
		f.publish(buf, bp)
		if i < len(j.flights)-1 {
			o.addPin() // the write's own; the last one takes the job's
		}
		writes.Go(func() {
			c.storeBlock(o, b, f, buf, crc, fromBucket)
		})
	}
}

// fetchEarly fetches one block for a reader that asked for part of it
// (its flight's early range): a GET from the start of that part to the
// block's end, whose first bytes go to the reader (showEarly) before the
// rest arrive, and, when the part does not start the block, a second GET
// for the block's head at the same time. The reader waits for its own
// bytes, not for the block, and the block's two halves come over two
// connections. The head's GET takes no fetch slot: slots are taken before
// buffers, never after (fetchRange), and the pool buffer held bounds it.
func (c *Cache) fetchEarly(o *object, j job) {
	b, f := j.b0, j.flights[0]
	start, n, e := int64(b)*o.bs, o.blockLen(b), f.early
	rc, err := c.read(o, start+e.lo, n-e.lo)
	if err != nil {
		c.failFrom(o, j, 0, err)
		c.unpin(o)
		return
	}
	buf, bp, ok := c.tryBlockBuf(o, b)
	if !ok {
		buf, bp = c.blockBuf(o, b)
	}
	head := make(chan error, 1)
	if e.lo > 0 {
		go func() { head <- c.readFull(o, start, buf[:e.lo]) }()
	} else {
		head <- nil
	}
	_, err = io.ReadFull(rc, buf[e.lo:e.hi])
	if err == nil {
		f.showEarly(buf)
		_, err = io.ReadFull(rc, buf[e.hi:n])
	}
	_ = rc.Close()
	if err != nil {
		err = fetchErr(c, o, err)
	}
	if herr := <-head; err == nil {
		err = herr
	}
	if err != nil {
		f.hideEarly()
		c.putBuf(o, bp)
		c.failFrom(o, j, 0, err)
		c.unpin(o)
		return
	}
	crc := blockCRC(buf)
	f.publish(buf, bp)
	c.storeBlock(o, b, f, buf, crc, fromBucket)
}

// readFull fills p with o's bytes at off by one GET that takes no fetch
// slot (fetchEarly's head: the pool buffer its caller holds bounds it),
// its bytes counted as read's are.
func (c *Cache) readFull(o *object, off int64, p []byte) error {
	rc, err := c.openRange(o, off, int64(len(p)))
	if err != nil {
		return err
	}
	body := &slotBody{ReadCloser: rc, o: o, bytes: &c.stats.bucketBytes}
	defer func() { _ = body.Close() }()
	if _, err := io.ReadFull(body, p); err != nil {
		return fetchErr(c, o, err)
	}
	return nil
}

// fetchParts fetches one block larger than PartSize with parallel GETs.
func (c *Cache) fetchParts(o *object, j job) {
	b := j.b0
	buf, bp := c.blockBuf(o, b)
	part := c.opts.PartSize
	var (
		wg   sync.WaitGroup
		mu   sync.Mutex
		ferr error
	)
	for p := int64(0); p < int64(len(buf)); p += part {
		wg.Add(1)
		go func(p int64) {
			defer wg.Done()
			seg := buf[p:min(p+part, int64(len(buf)))]
			rc, err := c.read(o, int64(b)*o.bs+p, int64(len(seg)))
			if err == nil {
				_, err = io.ReadFull(rc, seg)
				_ = rc.Close()
				if err != nil {
					err = fetchErr(c, o, err)
				}
			}
			if err != nil {
				mu.Lock()
				if ferr == nil {
					ferr = err
				}
				mu.Unlock()
			}
		}(p)
	}
	wg.Wait()
	if ferr != nil {
		c.putBuf(o, bp)
		c.failFrom(o, j, 0, ferr)
		c.unpin(o)
		return
	}
	crc := blockCRC(buf)
	j.flights[0].publish(buf, bp)
	c.storeBlock(o, b, j.flights[0], buf, crc, fromBucket)
}

func fetchErr(c *Cache, o *object, err error) error {
	if c.ctx.Err() != nil {
		return ErrClosed
	}
	if errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF) {
		err = fmt.Errorf("%w: body ended early", objstore.ErrUnavailable)
	}
	return fmt.Errorf("cache: fetch %q: %w", o.info.Key, err)
}

// failFrom fails the flights of j from index i on.
func (c *Cache) failFrom(o *object, j job, i int, err error) {
	for ; i < len(j.flights); i++ {
		c.complete(o, j.b0+i, j.flights[i], err)
	}
}

// markDirty queues o for the next flush.
func (c *Cache) markDirty(o *object) {
	c.mu.Lock()
	if c.objs[o.info.Key] == o {
		c.dirtyObjs[o] = struct{}{}
	}
	c.mu.Unlock()
}

// versionMoved handles a GET refused because the bucket holds another
// version: o stops being the cached version of its key and the key's
// attributes are forgotten so the next Stat asks the bucket.
func (c *Cache) versionMoved(o *object) {
	c.mu.Lock()
	if c.objs[o.info.Key] == o {
		c.detachLocked(o)
		c.staleKeys[o.info.Key] = struct{}{}
	}
	c.mu.Unlock()
	c.invalidate(o.info.Key) // on a read path: the periodic flush persists it
}

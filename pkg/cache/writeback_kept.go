package cache

import "time"

// Kept blocks. A block written with O_DIRECT is on disk but not in the
// page cache, so a reader arriving after the write (the usual case for a
// sequential reader behind its read-ahead) would read it back from the
// disk. Instead the buffer of a block fetched ahead of its reader
// (forAhead: read-ahead, directory prefetch; a block fetched for a reader
// waiting on it was copied from its buffer already) is kept from when
// the block becomes ready until a read reaches the end of the block, the
// last pin of the
// object goes, the cache keeps more than keepLimit blocks of that size,
// the pool needs a buffer (the oldest kept block goes first), or nobody
// read it to its end within the pool's idle time. Reads of
// ready blocks copy kept bytes from memory and pread the rest (readpath.go).
//
// Lock order: object.mu → flight.mu → bufPool.mu; nothing holding a
// flight's or the pool's mu takes an object's.

// keptRef is one kept block in its pool's list.
type keptRef struct {
	o  *object
	b  int
	f  *flight
	at time.Time // when it was kept
}

// keepLimit is how many blocks of o's size the cache keeps at most: what
// the parallel fetches hold in flight now.
func (c *Cache) keepLimit(o *object) int {
	return max(2, int(int64(c.fetches.current())*c.opts.PartSize/o.bs))
}

// keepLocked keeps the buffer of block b, published on f and about to be
// marked ready, for the readers to come, unless a reader already read the
// block to its end. It returns the oldest kept blocks beyond keepLimit,
// which the caller unkeeps after unlocking. The caller holds o.mu.
func (c *Cache) keepLocked(o *object, b int, f *flight) (victims []keptRef, kept bool) {
	if f.why != forAhead || f.consumed.Load() {
		// A reader sets consumed before it unkeeps under o.mu, so one of
		// the two sees the other.
		return nil, false
	}
	p := c.pool(o.bs)
	if old := o.kept[b]; old != nil {
		// Refetched after a drop: only the newer buffer stays.
		p.forget(old)
		old.release(p)
	}
	if o.kept == nil {
		o.kept = make(map[int]*flight)
	}
	o.kept[b] = f
	o.keptBits.set(b)
	return p.push(keptRef{o: o, b: b, f: f}, c.keepLimit(o)), true
}

// unkeepAll unkeeps the blocks push returned.
func (c *Cache) unkeepAll(victims []keptRef) {
	for _, v := range victims {
		v.o.unkeep(v.b, v.f, c.pool(v.o.bs))
	}
}

// unkeep drops block b's kept buffer if it is still f's.
func (o *object) unkeep(b int, f *flight, p *bufPool) {
	o.mu.Lock()
	mine := o.kept[b] == f
	if mine {
		delete(o.kept, b)
		o.keptBits.clear(b)
		p.forget(f)
	}
	o.mu.Unlock()
	if mine {
		f.release(p)
	}
}

// forgetUncached drops o's uncached block if it is f's.
func (o *object) forgetUncached(f *flight) {
	o.mu.Lock()
	if o.uncached == f {
		o.uncached = nil
	}
	o.mu.Unlock()
}

// dropKept drops all of o's kept buffers and its uncached block (its last
// pin went).
func (o *object) dropKept(p *bufPool) {
	o.mu.Lock()
	o.uncached = nil
	drop := make([]*flight, 0, len(o.kept))
	for b, f := range o.kept {
		drop = append(drop, f)
		o.keptBits.clear(b)
		p.forget(f)
	}
	clear(o.kept)
	o.mu.Unlock()
	for _, f := range drop {
		f.release(p)
	}
}

// keptFlight returns the flight whose buffer holds ready block b, or nil.
func (o *object) keptFlight(b int) *flight {
	if !o.keptBits.has(b) {
		return nil
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.kept[b]
}

// push appends r to the kept list and pops (and returns) the oldest
// entries beyond limit; the caller unkeeps those. The caller holds r.o.mu.
// A get waiting for a buffer can now reclaim r.
func (p *bufPool) push(r keptRef, limit int) []keptRef {
	p.mu.Lock()
	defer p.mu.Unlock()
	r.at = time.Now()
	r.f.elem = p.kept.PushBack(r)
	p.cond.Broadcast()
	p.armLocked()
	var out []keptRef
	for p.kept.Len() > limit {
		e := p.kept.Front()
		v := p.kept.Remove(e).(keptRef)
		v.f.elem = nil
		out = append(out, v)
	}
	return out
}

// forget takes f out of the kept list; the caller holds the object's mu.
func (p *bufPool) forget(f *flight) {
	p.mu.Lock()
	if f.elem != nil {
		p.kept.Remove(f.elem)
		f.elem = nil
	}
	p.mu.Unlock()
}

package cache

import (
	"container/list"
	"sync"
	"time"

	"github.com/basin-csi/basin/internal/directio"
)

// bufPool owns the block buffers of one block size: fetch buffers,
// published and kept blocks, verification and install buffers. It bounds
// how many exist (maxBufs): get takes a free buffer, else allocates one
// while below the bound, else reclaims the oldest kept block, else waits
// for a put. Every buffer is given back in bounded time (a write or a
// verification ends; kept blocks are reclaimable), so the wait ends and
// fetches slow down to the disk's pace instead of growing memory.
//
// The free list is not a sync.Pool: that one is emptied every other GC
// cycle, which a stream of block allocations triggers often, and every new
// buffer costs a page fault per 4 KiB on first touch, on a VM about as
// much CPU as receiving its bytes. Free buffers are freed once the pool
// was idle for idle. The pool also holds the cache's list of kept blocks
// of its size (writeback_kept.go).
type bufPool struct {
	// constant
	size    int
	maxBufs int
	idle    time.Duration // how long free buffers and kept blocks stay unused

	mu sync.Mutex
	// guarded by mu
	cond  sync.Cond // signalled when a buffer is put back
	free  []*[]byte
	total int  // buffers handed out or free; INVARIANT: total <= maxBufs
	used  bool // a get since the last idle check
	// waiters counts gets blocked in cond.Wait.
	waiters int
	// timer runs the idle check; nil when no buffer is free and no block
	// kept.
	timer *time.Timer
	// shorts are the short pools by size class (writeback_short.go).
	shorts map[int64]*bufPool
	// kept lists the kept blocks (keptRef), oldest first.
	// INVARIANT: an entry is in kept iff its flight is in its object's
	// kept map, except between its removal here and unkeep.
	kept list.List
}

// newBufPool makes the pool of size-byte buffers, at most budget bytes of
// them (Options.BufferSize: a full read-ahead of fetch buffers and kept
// blocks) and at least 4; free buffers and kept blocks unused for idle
// go.
func newBufPool(size, budget int64, idle time.Duration) *bufPool {
	p := &bufPool{size: int(size), maxBufs: max(4, int(budget/size)), idle: idle}
	p.cond.L = &p.mu
	return p
}

// get returns a buffer of the pool's size (contents undefined), waiting
// while all maxBufs buffers are in use. A caller must not hold anything a
// holder of a buffer may wait for: flushMu (block writes evict), an
// object's mu (reclaiming a kept block takes it), a fetch slot where parts
// of blocks wait for slots (fetchRange).
func (p *bufPool) get() *[]byte {
	b, _ := p.take(true)
	return b
}

// tryGet is get without the wait: false when all maxBufs buffers are in
// use and no kept block can be reclaimed.
func (p *bufPool) tryGet() (*[]byte, bool) {
	return p.take(false)
}

// take gets a free buffer, else allocates one while below the bound, else
// reclaims the oldest kept block, else waits for a put (or gives up).
func (p *bufPool) take(wait bool) (*[]byte, bool) {
	p.mu.Lock()
	p.used = true
	for {
		if n := len(p.free); n > 0 {
			b := p.free[n-1]
			p.free[n-1] = nil
			p.free = p.free[:n-1]
			p.mu.Unlock()
			return b, true
		}
		if p.total < p.maxBufs {
			p.total++
			p.mu.Unlock()
			return p.alloc(), true
		}
		if e := p.kept.Front(); e != nil {
			v := p.kept.Remove(e).(keptRef)
			v.f.elem = nil
			p.mu.Unlock()
			v.o.unkeep(v.b, v.f, p) // puts the buffer back
			p.mu.Lock()
			continue
		}
		if !wait {
			p.mu.Unlock()
			return nil, false
		}
		p.waiters++
		p.cond.Wait()
		p.waiters--
	}
}

// bytes is the memory of the buffers allocated now, short ones included.
func (p *bufPool) bytes() int64 {
	n := p.shortBytes()
	p.mu.Lock()
	defer p.mu.Unlock()
	return n + int64(p.total)*int64(p.size)
}

// put returns a buffer from get or getShort; nobody may use it afterwards.
// A short buffer goes back to the short pool of its capacity.
func (p *bufPool) put(b *[]byte) {
	if c := cap(*b); c != p.size {
		p.shortPool(int64(c)).put(b)
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.free = append(p.free, b)
	p.cond.Signal()
	p.armLocked()
}

// armLocked starts the idle check unless it runs; the caller holds mu.
func (p *bufPool) armLocked() {
	if p.timer == nil {
		p.timer = time.AfterFunc(p.idle, p.trimIdle)
	}
}

// trimIdle runs every idle while buffers are free or blocks kept: it
// drops the blocks kept longer than idle (a reader that never came back
// must not hold them while its file stays open) and the free buffers if
// nothing was taken since the last check.
func (p *bufPool) trimIdle() {
	p.mu.Lock()
	var stale []keptRef
	for e := p.kept.Front(); e != nil; e = p.kept.Front() {
		v := e.Value.(keptRef)
		if time.Since(v.at) < p.idle {
			break
		}
		p.kept.Remove(e)
		v.f.elem = nil
		stale = append(stale, v)
	}
	if !p.used {
		p.total -= len(p.free)
		for _, b := range p.free {
			p.dealloc(b)
		}
		p.free = nil
	}
	p.used = false
	if len(p.free) > 0 || p.kept.Len() > 0 || len(stale) > 0 {
		p.timer.Reset(p.idle)
	} else {
		p.timer = nil
	}
	p.mu.Unlock()
	for _, v := range stale {
		v.o.unkeep(v.b, v.f, p) // puts the buffer back, freed at a later check
	}
}

// mmapMin is the smallest buffer allocated outside the Go heap.
const mmapMin = 1 << 20

// alloc makes a buffer. Large ones come from directio.Alloc (page
// aligned for O_DIRECT, outside the Go heap); with transparent huge pages
// "always" (not "madvise") in 2 MiB pages.
func (p *bufPool) alloc() *[]byte {
	if p.size >= mmapMin {
		b, err := directio.Alloc(p.size)
		if err == nil {
			return &b
		}
	}
	b := make([]byte, p.size)
	return &b
}

// dealloc frees a buffer from alloc that nothing refers to any more.
func (p *bufPool) dealloc(b *[]byte) {
	if p.size >= mmapMin {
		directio.Free(*b) // EINVAL for a heap buffer: the GC frees it
	}
}

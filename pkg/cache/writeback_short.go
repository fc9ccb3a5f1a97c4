package cache

import "math/bits"

// Short buffers. A block shorter than a quarter of its pool's size (a
// small object fetched whole, a large object's last block) does not take a
// pooled block buffer: a 4 KiB object needs no 4 MiB buffer. Its buffer
// comes from one of the pool's short pools instead, one per power-of-two
// size class, so that a cold small-file epoch recycles its buffers rather
// than allocating one per file (each a zeroed heap allocation whose bytes
// drive the collector: docs/architecture.md, "CPU per cold small file").
//
// A short buffer lives exactly like a block buffer: it is published on its
// flight and given back by the flight (release, abandon) or by the fetch
// that failed, always through the pool of its object's block size, whose
// put routes it by capacity to the short pool it came from. A short pool
// never waits and never reclaims kept blocks: when it is at its bound,
// getShort allocates a buffer that is not pooled (bp nil), as before.

// shortMin is the smallest short size class.
const shortMin = 4 << 10

// shortPoolBytes bounds the bytes of one short pool's buffers: the
// directory prefetch's 64 GETs of up to 128 KiB each fit twice.
const shortPoolBytes = 16 << 20

// shortClass is the size class of an n-byte short buffer: the next power
// of two, at least shortMin.
func shortClass(n int64) int64 {
	if n <= shortMin {
		return shortMin
	}
	return 1 << bits.Len64(uint64(n-1))
}

// getShort returns a buffer of n bytes (n < p.size/4) and its pooled
// backing, or a plain allocation and nil when the short pool is at its
// bound.
func (p *bufPool) getShort(n int64) ([]byte, *[]byte) {
	if bp, ok := p.shortPool(shortClass(n)).tryGet(); ok {
		return (*bp)[:n], bp
	}
	return make([]byte, n), nil
}

// shortPool returns the short pool of class size, creating it.
func (p *bufPool) shortPool(size int64) *bufPool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if s := p.shorts[size]; s != nil {
		return s
	}
	if p.shorts == nil {
		p.shorts = make(map[int64]*bufPool)
	}
	s := newBufPool(size, shortPoolBytes, p.idle)
	p.shorts[size] = s
	return s
}

// shortBytes is the memory of the short pools' buffers.
func (p *bufPool) shortBytes() int64 {
	p.mu.Lock()
	shorts := make([]*bufPool, 0, len(p.shorts))
	for _, s := range p.shorts {
		shorts = append(shorts, s)
	}
	p.mu.Unlock()
	var n int64
	for _, s := range shorts {
		n += s.bytes()
	}
	return n
}

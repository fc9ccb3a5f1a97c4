package fuse

import (
	"context"
	"errors"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"

	"github.com/basin-csi/basin/internal/directio"
)

// A staged file that is streamed (streamupload.go) bypasses the page
// cache (internal/directio): on this kind of machine a buffered write of a
// large file costs about 1.1 s of CPU per GB, most of the FUSE process's
// time on a checkpoint write, and a direct one a fraction of that.
//   - While the stream runs, a WRITE that appends whole aligned pages goes
//     to the disk directly, from an aligned copy (stagedSource.bounce).
//     Anything else (the first parts, an unaligned tail, a rewrite, which
//     ends the stream) goes through the page cache as before. The staged
//     file holds every acknowledged byte either way, for a successor.
//   - The stream reads each part once, directly, into memory from a
//     bounded pool (partPool: half of bufferSize), and the store's SDK
//     signs, checksums and sends it from there, instead of reading the
//     file three times.
//   - The cache's install computes its checksums from direct reads too
//     (cache.Install).
//
// Only appends go directly, and the stream reads only bytes already final
// below them, so no page is read through the page cache while it is being
// written directly (which the kernel cannot keep coherent).

// stagedSource is the source of one stream: the staged file.
type stagedSource struct {
	// constant
	file   *os.File  // the staged file, through the page cache
	direct *os.File  // file's direct descriptor; nil if refused
	parts  *partPool // part buffers

	noDirect atomic.Bool // a direct write or read was refused (EINVAL)

	// guarded by the write state's mu
	bounce []byte // aligned copy of one WRITE; nil until the first
}

// newStagedSource opens file's direct descriptor. Without one it still
// serves parts, through the page cache. Parts of partSize must start on a
// page: a part read through the page cache that ends inside a page would
// cache that page while the rest of it is still to be written directly.
func newStagedSource(file *os.File, parts *partPool, partSize int64) *stagedSource {
	s := &stagedSource{file: file, parts: parts}
	if partSize%int64(directio.Align) != 0 {
		return s
	}
	if d, err := directio.Reopen(file, os.O_RDWR); err == nil {
		s.direct = d
	}
	return s
}

// ReadAt reads through the page cache (io.ReaderAt).
func (s *stagedSource) ReadAt(p []byte, off int64) (int, error) { return s.file.ReadAt(p, off) }

// ReadPart implements objstore.PartReader: one direct read of the part's
// pages into a pool buffer.
func (s *stagedSource) ReadPart(ctx context.Context, off, n int64) ([]byte, func(), error) {
	buf, err := s.parts.get(ctx)
	if err != nil {
		return nil, nil, err
	}
	release := func() { s.parts.put(buf) }
	if int64(len(buf)) < n {
		release()
		return nil, nil, errPartTooLarge
	}
	if s.direct != nil && !s.noDirect.Load() {
		err := directio.ReadAt(s.direct, buf, off, n)
		if err == nil {
			return buf[:n], release, nil
		}
		s.refused(err)
	}
	if _, err := s.file.ReadAt(buf[:n], off); err != nil {
		release()
		return nil, nil, err
	}
	return buf[:n], release, nil
}

// writeDirect writes data at off directly, from an aligned copy, if it
// can. false: the caller writes it through the page cache. The caller
// holds the write state's mu and content.
func (s *stagedSource) writeDirect(data []byte, off int64) bool {
	if s.direct == nil || s.noDirect.Load() || len(data) == 0 || len(data)%directio.Align != 0 || off%int64(directio.Align) != 0 || len(data) > maxRequest {
		return false
	}
	if s.bounce == nil {
		s.bounce = directio.Buf(maxRequest)
	}
	buf := s.bounce[:copy(s.bounce, data)]
	if _, err := s.direct.WriteAt(buf, off); err != nil {
		// Refused, or failed part way: the caller writes it all again
		// through the page cache, whose error it returns.
		s.refused(err)
		return false
	}
	return true
}

// refused turns direct I/O off for the rest of the stream when the file
// system refuses it.
func (s *stagedSource) refused(err error) {
	if errors.Is(err, unix.EINVAL) {
		s.noDirect.Store(true)
	}
}

// close releases the direct descriptor. A part still being read keeps it
// (os.File closes the descriptor after its last use; reads after Close
// fail and the part is read through the page cache).
func (s *stagedSource) close() {
	if s.direct != nil {
		_ = s.direct.Close()
	}
	s.bounce = nil
}

var errPartTooLarge = errors.New("part larger than the part buffers")

// partPool bounds the memory of the parts in flight: slots buffers of
// size bytes at most. They are mappings outside the Go heap (the garbage
// collector neither scans them nor counts them in its target), aligned
// for direct reads. A buffer is never unmapped, as an HTTP transport may
// still read a failed part's body after its release: when no part has
// been out for idle, the buffers' memory goes back to the system
// (directio.Drop) and the mappings stay.
type partPool struct {
	// constant
	size  int
	idle  time.Duration
	slots chan struct{}

	mu sync.Mutex
	// guarded by mu
	free  [][]byte // buffers not out
	out   int      // buffers out
	trims int      // generation of the idle check; a get or put ends it
}

// partPoolIdle is how long the part buffers stay after the last part.
const partPoolIdle = 5 * time.Second

func newPartPool(size int64, slots int) *partPool {
	return &partPool{size: int(directio.RoundUp(size)), idle: partPoolIdle, slots: make(chan struct{}, max(slots, 1))}
}

// partSlots is how many parts of partSize the pool holds: half the
// mount's buffer memory (bufferSize; the other half is the read path's),
// at least 2 and at most the parts a stream has in flight.
func partSlots(bufferSize, partSize int64, streamParts int) int {
	return int(min(int64(streamParts), max(2, bufferSize/2/max(partSize, 1))))
}

// get waits for a slot and returns a buffer.
func (p *partPool) get(ctx context.Context) ([]byte, error) {
	select {
	case p.slots <- struct{}{}:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.trims++
	if k := len(p.free); k > 0 {
		b := p.free[k-1]
		p.free = p.free[:k-1]
		p.out++
		return b, nil
	}
	b, err := directio.Alloc(p.size)
	if err != nil {
		<-p.slots
		return nil, err
	}
	p.out++
	return b, nil
}

// put gives a buffer from get back.
func (p *partPool) put(b []byte) {
	p.mu.Lock()
	p.free = append(p.free, b[:cap(b)])
	p.out--
	p.trims++
	if p.out == 0 {
		gen := p.trims
		time.AfterFunc(p.idle, func() { p.drop(gen) })
	}
	p.mu.Unlock()
	<-p.slots
}

// drop gives the free buffers' memory back if nothing was taken or given
// back since generation gen.
func (p *partPool) drop(gen int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.trims != gen || p.out != 0 {
		return
	}
	for _, b := range p.free {
		directio.Drop(b)
	}
}

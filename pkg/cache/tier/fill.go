package tier

import (
	"bytes"
	"context"
	"errors"
	"io"
	"sync"

	"github.com/basin-csi/basin/pkg/objstore"
)

// A Fill collects the blocks of one run fetched from the origin, in order,
// and queues them for upload once complete. Its memory is reserved in the
// queue's byte budget from StartFill to the end of its upload.
type Fill struct {
	t    *Tier
	id   Identity
	data []byte   // the run's bytes, filled up to n
	crcs []uint32 // a CRC32C per block added
	n    int64
	once sync.Once
}

// StartFill reserves a fill of the run id names, or returns nil (counted
// as dropped) when the queue or its byte budget is full or the tier is
// skipped. The caller Adds every block of the run in order, then calls
// Done, or Abort if it cannot.
func (t *Tier) StartFill(id Identity) *Fill {
	if !id.valid() || !t.usable() || t.ctx.Err() != nil {
		t.drop.Add(1)
		return nil
	}
	n := id.Len()
	if t.queueLen.Add(1) > int64(t.opts.MaxQueue) {
		t.queueLen.Add(-1)
		t.drop.Add(1)
		return nil
	}
	if t.queueBytes.Add(n) > t.opts.MaxQueueBytes {
		t.queueBytes.Add(-n)
		t.queueLen.Add(-1)
		t.drop.Add(1)
		return nil
	}
	return &Fill{t: t, id: id, data: make([]byte, n), crcs: make([]uint32, 0, id.Blocks)}
}

// Add copies the next block of the run and its CRC32C. A nil Fill does
// nothing, so callers need not check StartFill's result.
func (f *Fill) Add(block []byte, crc uint32) {
	if f == nil {
		return
	}
	if f.n+int64(len(block)) > int64(len(f.data)) || len(f.crcs) == f.id.Blocks {
		f.Abort()
		return
	}
	f.n += int64(copy(f.data[f.n:], block))
	f.crcs = append(f.crcs, crc)
}

// Done queues the fill if every block was added, and aborts it otherwise.
func (f *Fill) Done() {
	if f == nil {
		return
	}
	if f.n != int64(len(f.data)) || len(f.crcs) != f.id.Blocks {
		f.Abort()
		return
	}
	select {
	case f.t.queue <- f: // never blocks: StartFill reserved a place
	default:
		f.t.drop.Add(1)
		f.release()
	}
}

// Abort gives the fill's reservation back.
func (f *Fill) Abort() {
	if f != nil {
		f.release()
	}
}

// release ends the fill's reservation, once.
func (f *Fill) release() {
	f.once.Do(func() {
		f.t.queueBytes.Add(-int64(len(f.data)))
		f.t.queueLen.Add(-1)
		f.data = nil
	})
}

// upload stores queued fills until Close.
func (t *Tier) upload() {
	for {
		select {
		case <-t.ctx.Done():
			return
		case f := <-t.queue:
			t.put(f)
			f.release()
		}
	}
}

// put stores one fill, conditionally: another node's copy of the run is
// the same bytes, so a lost race only counts.
func (t *Tier) put(f *Fill) {
	if !t.usable() {
		t.drop.Add(1)
		return
	}
	h, err := encodeHeader(f.id, f.crcs)
	if err != nil {
		t.drop.Add(1)
		return
	}
	ctx, cancel := context.WithTimeout(t.ctx, t.opts.PutTimeout)
	defer cancel()
	size := int64(len(h)) + int64(len(f.data))
	body := io.MultiReader(bytes.NewReader(h), bytes.NewReader(f.data))
	_, err = t.store.Put(ctx, f.id.ObjectKey(), body, objstore.PutOptions{Size: size, IfAbsent: true,
		ContentType: "application/octet-stream"})
	switch {
	case err == nil:
		t.succeeded()
		t.filled.Add(1)
		t.filledBytes.Add(int64(len(f.data)))
	case errors.Is(err, objstore.ErrExists):
		t.succeeded()
		t.existing.Add(1)
	case t.ctx.Err() != nil:
		t.drop.Add(1) // closing
	default:
		t.failed("put", err)
		t.drop.Add(1)
	}
}

package tier

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"hash/crc32"
	"io"

	"github.com/basin-csi/basin/pkg/objstore"
)

// An offer is a run queued for upload: its identity, its blocks' CRC32Cs
// and how to read its bytes when an uploader gets to it (from the cache's
// data file), so that a queued run holds no memory.
type offer struct {
	id      Identity
	crcs    []uint32
	read    func(buf []byte) error
	refresh bool // store it even if the key exists (Refresh)
}

// Offer queues the upload of the run id names. read fills a buffer of
// id.Len() bytes with the run when an uploader takes it; crcs are the
// blocks' CRC32Cs, which the bytes read must match, or nothing is
// uploaded. Offer never waits: it returns false (counted as dropped) when
// the queue is full, the tier is skipped or closed.
func (t *Tier) Offer(id Identity, crcs []uint32, read func(buf []byte) error) bool {
	return t.enqueue(&offer{id: id, crcs: crcs, read: read})
}

// Refresh is Offer for a run the tier holds, found stale by Get: it is
// stored again, unconditionally, which renews its last-modified time.
func (t *Tier) Refresh(id Identity, crcs []uint32, read func(buf []byte) error) bool {
	return t.enqueue(&offer{id: id, crcs: crcs, read: read, refresh: true})
}

func (t *Tier) enqueue(o *offer) bool {
	id, crcs := o.id, o.crcs
	if !id.valid() || len(crcs) != id.Blocks || !t.usable() || t.ctx.Err() != nil {
		t.drop.Add(1)
		return false
	}
	t.queueLen.Add(1)
	t.queueBytes.Add(id.Len())
	select {
	case t.queue <- o:
		return true
	default:
		t.done(id)
		t.drop.Add(1)
		return false
	}
}

// done ends an offer's accounting.
func (t *Tier) done(id Identity) {
	t.queueLen.Add(-1)
	t.queueBytes.Add(-id.Len())
}

// upload stores queued runs until Close. Each uploader holds one run's
// bytes at a time: Uploaders runs are in memory at most.
func (t *Tier) upload() {
	for {
		select {
		case <-t.ctx.Done():
			return
		case o := <-t.queue:
			t.put(o)
			t.done(o.id)
		}
	}
}

// errStale: the bytes read for an upload do not match their CRC32Cs (the
// cache dropped or replaced the blocks since).
var errStale = errors.New("tier: the run's bytes changed before their upload")

// put stores one run, conditionally: another node's copy of the run is
// the same bytes, so a lost race only counts.
func (t *Tier) put(o *offer) {
	if !t.usable() {
		t.drop.Add(1)
		return
	}
	buf := make([]byte, o.id.Len())
	err := o.read(buf)
	for i, off := 0, int64(0); err == nil && i < o.id.Blocks; i++ {
		n := o.id.blockLen(i)
		if crc32.Checksum(buf[off:off+n], castagnoli) != o.crcs[i] {
			err = errStale
		}
		off += n
	}
	if err != nil {
		t.drop.Add(1) // a local problem, not the tier's
		return
	}
	h, err := encodeHeader(o.id, o.crcs)
	if err != nil {
		t.drop.Add(1)
		return
	}
	ctx, cancel := context.WithTimeout(t.ctx, t.opts.PutTimeout)
	defer cancel()
	size := int64(len(h)) + int64(len(buf))
	body := io.MultiReader(bytes.NewReader(h), bytes.NewReader(buf))
	_, err = t.store.Put(ctx, o.id.ObjectKey(), body, objstore.PutOptions{Size: size, IfAbsent: !o.refresh,
		ContentType: "application/octet-stream"})
	switch {
	case err == nil && o.refresh:
		t.succeeded()
		t.refreshed.Add(1)
	case err == nil:
		t.succeeded()
		t.filled.Add(1)
		t.filledBytes.Add(int64(len(buf)))
	case errors.Is(err, objstore.ErrExists):
		t.succeeded()
		t.existing.Add(1)
	case t.ctx.Err() != nil:
		t.drop.Add(1) // closing
	case !o.refresh && t.storedMeanwhile(o.id.ObjectKey()):
		// Another node stored it first. A server may refuse a
		// conditional PUT before it read the body and close the
		// connection, so the loser sees a reset, not 412 (MinIO with
		// 4 MiB blocks: 6-8 of 16 racing PUTs of stored keys).
		t.succeeded()
		t.existing.Add(1)
	default:
		t.failed("put", fmt.Errorf("tier: put %s: %w", o.id.ObjectKey(), err))
		t.drop.Add(1)
	}
}

// storedMeanwhile reports whether the tier holds key, asked after a
// failed conditional PUT.
func (t *Tier) storedMeanwhile(key string) bool {
	ctx, cancel := context.WithTimeout(t.ctx, t.opts.PutTimeout)
	defer cancel()
	_, err := t.store.Stat(ctx, key)
	return err == nil
}

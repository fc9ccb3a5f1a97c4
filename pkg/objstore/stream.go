package objstore

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"sync"
	"sync/atomic"
)

// StreamOptions tune a streamed upload (Store.StartStream).
type StreamOptions struct {
	// PartSize is the size of every part but the last. Zero means the
	// store's Config.PartSize; adapters raise it to their minimum.
	PartSize int64
	// Concurrency is the number of parts uploaded at once. Zero means the
	// store's Config.UploadConcurrency. Adapters whose uploads have no
	// parallel parts (GCS resumable uploads) use 1.
	Concurrency int
	// ContentType is stored with the object when set.
	ContentType string
	// Metadata is stored as the object's user metadata (metadata.go).
	Metadata map[string]string
}

// Or returns the options' part size and concurrency, each replaced by
// the given default when zero.
func (o StreamOptions) Or(partSize int64, concurrency int) (int64, int) {
	if o.PartSize <= 0 {
		o.PartSize = partSize
	}
	if o.Concurrency <= 0 {
		o.Concurrency = concurrency
	}
	return o.PartSize, o.Concurrency
}

// Stream is an upload in progress whose content is read from a source
// while the source is still being written (Store.StartStream). Nothing is
// visible under the key, and the previous object stays, until Complete
// returns successfully. Its methods may be called from any goroutine.
type Stream interface {
	// Extend reports that the source's bytes [0, n) are final. Whole
	// parts of them go up in the background; Extend never waits for the
	// network. n never decreases.
	Extend(n int64)
	// Complete uploads what remains of the source's first size bytes
	// (size is at least the last Extend), waits for every part and makes
	// them the object. On failure the caller calls Abort.
	Complete(ctx context.Context, size int64) (ObjectInfo, error)
	// Abort stops the upload and discards its parts in the background;
	// the previous object stays. It never waits for the network and may
	// be called more than once; after a successful Complete it does
	// nothing.
	Abort()
	// Sent is the number of bytes of the parts the store accepted.
	Sent() int64
}

// PartSink is the adapter's side of a stream built by NewPartStream:
// the store's own multipart calls.
type PartSink interface {
	// Begin starts the upload. It runs once, in the background, before
	// any part.
	Begin(ctx context.Context) error
	// Part uploads part n (1-based) holding the source's bytes at off.
	// Up to the stream's concurrency parts run at once; with a
	// concurrency of 1 they come in order.
	Part(ctx context.Context, n int, off int64, body *io.SectionReader) error
	// Commit makes the parts 1..parts the object.
	Commit(ctx context.Context, parts int) (ObjectInfo, error)
	// Abort discards the upload. It runs once, after every part returned,
	// whether Begin succeeded or not.
	Abort(ctx context.Context)
}

// PartReader is a stream source that reads a whole part at once into
// memory it owns (for example with one direct read of the disk), for
// sources where that is cheaper than the SDK's reads of a section: a
// signed part's body is read once for its signature, once for its
// checksum and once to send it. NewPartStream uses it when src has it.
type PartReader interface {
	io.ReaderAt
	// ReadPart returns the n bytes of the source at off, and release,
	// which the stream calls once the part's upload returned. The bytes
	// must stay readable memory after release (Go memory, or a mapping
	// that is never unmapped): an HTTP transport may still read a failed
	// request's body then. On error the stream reads the part as a
	// section of the source instead.
	ReadPart(ctx context.Context, off, n int64) (data []byte, release func(), err error)
}

// ErrStreamAborted: the stream was aborted before Complete.
var ErrStreamAborted = errors.New("objstore: stream aborted")

// NewPartStream returns a Stream that cuts src into parts of partSize as
// it is extended and hands them to sink, at most concurrency at once. The
// parts read src directly (no buffering), or through its ReadPart when it
// is a PartReader: src's final bytes must not change. ctx bounds the
// whole upload.
func NewPartStream(ctx context.Context, src io.ReaderAt, sink PartSink, partSize int64, concurrency int) Stream {
	ctx, cancel := context.WithCancel(ctx)
	s := &partStream{
		src: src, sink: sink, partSize: max(partSize, 1), concurrency: max(concurrency, 1),
		ctx: ctx, cancel: cancel, begun: make(chan struct{}), idle: make(chan struct{}),
	}
	go func() {
		s.beginErr = s.sink.Begin(ctx)
		close(s.begun)
	}()
	return s
}

// partStream is the Stream NewPartStream returns.
type partStream struct {
	// constant
	src         io.ReaderAt
	sink        PartSink
	partSize    int64
	concurrency int
	ctx         context.Context
	cancel      context.CancelFunc
	begun       chan struct{} // closed when Begin returned
	beginErr    error         // set before begun is closed

	sent atomic.Int64

	mu sync.Mutex
	// guarded by mu
	final    int64 // bytes of src that are final
	next     int64 // offset of the next part to start
	parts    int   // parts started
	inflight int
	closing  bool          // Complete called: the last, short part may start
	idle     chan struct{} // closed and replaced when inflight drops to 0
	err      error         // first failure; no part starts after it
	state    streamState
}

type streamState int

const (
	streamOpen streamState = iota
	streamCommitted
	streamAborted
)

func (s *partStream) Sent() int64 { return s.sent.Load() }

func (s *partStream) Extend(n int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if n > s.final {
		s.final = n
	}
	s.startLocked()
}

// startLocked starts every part that is ready, within the concurrency.
func (s *partStream) startLocked() {
	for s.err == nil && s.state == streamOpen && s.inflight < s.concurrency {
		left := s.final - s.next
		if left < s.partSize && (!s.closing || (left == 0 && s.parts > 0)) {
			return
		}
		n := min(left, s.partSize)
		s.parts++
		s.inflight++
		go s.upload(s.parts, s.next, n)
		s.next += n
	}
}

func (s *partStream) upload(part int, off, n int64) {
	<-s.begun
	err := s.beginErr
	if err == nil {
		body, release := s.body(off, n)
		err = s.sink.Part(s.ctx, part, off, body)
		release()
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if err != nil && s.err == nil {
		s.err = fmt.Errorf("part %d at %d: %w", part, off, err)
	}
	if err == nil {
		s.sent.Add(n)
	}
	s.inflight--
	s.startLocked()
	if s.inflight == 0 {
		close(s.idle)
		s.idle = make(chan struct{})
	}
}

// body is part [off, off+n)'s body: the bytes src's ReadPart read, or
// a section of src. release gives a ReadPart buffer back once the part's
// upload returned.
func (s *partStream) body(off, n int64) (*io.SectionReader, func()) {
	if pr, ok := s.src.(PartReader); ok {
		if data, release, err := pr.ReadPart(s.ctx, off, n); err == nil {
			return io.NewSectionReader(bytes.NewReader(data), 0, n), release
		}
	}
	return io.NewSectionReader(s.src, off, n), func() {}
}

func (s *partStream) Complete(ctx context.Context, size int64) (ObjectInfo, error) {
	s.mu.Lock()
	if s.state != streamOpen {
		s.mu.Unlock()
		return ObjectInfo{}, ErrStreamAborted
	}
	if size < s.final {
		s.mu.Unlock()
		return ObjectInfo{}, fmt.Errorf("objstore: stream completed at %d, below the %d bytes already final", size, s.final)
	}
	s.final, s.closing = size, true
	s.startLocked()
	for s.err == nil && (s.inflight > 0 || s.next < s.final) && s.state == streamOpen {
		idle := s.idle
		s.mu.Unlock()
		select {
		case <-idle:
		case <-ctx.Done():
			return ObjectInfo{}, ctx.Err()
		}
		s.mu.Lock()
	}
	err, parts := s.err, s.parts
	if err == nil && s.state != streamOpen {
		err = ErrStreamAborted
	}
	s.mu.Unlock()
	if err != nil {
		return ObjectInfo{}, err
	}
	info, err := s.sink.Commit(ctx, parts)
	if err != nil {
		return ObjectInfo{}, err
	}
	s.mu.Lock()
	s.state = streamCommitted
	s.mu.Unlock()
	s.cancel()
	return info, nil
}

func (s *partStream) Abort() {
	s.mu.Lock()
	if s.state != streamOpen {
		s.mu.Unlock()
		return
	}
	s.state = streamAborted
	s.mu.Unlock()
	s.cancel()
	go func() {
		<-s.begun
		s.mu.Lock()
		for s.inflight > 0 {
			idle := s.idle
			s.mu.Unlock()
			<-idle
			s.mu.Lock()
		}
		s.mu.Unlock()
		// The stream's context is cancelled; the abort gets its own.
		s.sink.Abort(context.WithoutCancel(s.ctx))
	}()
}

package gcsstore

import (
	"context"
	"fmt"
	"io"
	"sync/atomic"

	"cloud.google.com/go/storage"

	"github.com/basin-csi/basin/pkg/objstore"
)

// Put uploads body under key with the SDK's Writer. Bodies that fit in one
// chunk go up in a single request; larger ones use a resumable upload in
// chunks of cfg.PartSize (rounded up to GCS's 256 KiB granularity), each
// chunk retried from the Writer's buffer. Chunks go up one after another:
// a resumable upload has no parallel parts, so UploadConcurrency is not
// used here.
//
// The upload runs under ctx alone (no RequestTimeout: it streams a body).
// When the body fails, or its length differs from opts.Size, the upload is
// cancelled before it is finalised, so no partial object replaces the old
// one.
func (s *Store) Put(ctx context.Context, key string, body io.Reader, opts objstore.PutOptions) (objstore.ObjectInfo, error) {
	if err := checkKey(key); err != nil {
		return objstore.ObjectInfo{}, err
	}
	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	w := s.newWriter(wctx, key, chunkSize(s.cfg.PartSize, opts.Size), opts.ContentType, opts.IfAbsent)
	w.Metadata = opts.Metadata
	if w.Metadata == nil {
		w.Metadata = map[string]string{} // a new generation has no metadata of the old one
	}

	src := &bodyReader{r: body}
	n, copyErr := io.Copy(w, src)
	switch {
	case src.err != nil:
		cancel()
		_ = w.Close()
		return objstore.ObjectInfo{}, fmt.Errorf("gcsstore: put %q: reading body: %w", key, src.err)
	case copyErr == nil && opts.Size >= 0 && n != opts.Size:
		cancel()
		_ = w.Close()
		return objstore.ObjectInfo{}, fmt.Errorf("gcsstore: put %q: body has %d bytes, PutOptions.Size says %d", key, n, opts.Size)
	}
	closeErr := w.Close()
	if copyErr == nil {
		copyErr = closeErr
	}
	if copyErr != nil {
		err := mapErr(opPut, key, copyErr)
		if opts.IfAbsent {
			err = existsErr(err)
		}
		return objstore.ObjectInfo{}, err
	}
	return infoFromAttrs(w.Attrs()), nil
}

// newWriter returns the SDK's Writer of key, its retries bounded by
// MaxAttempts per chunk (attemptLimiter); ifAbsent makes it a conditional
// create (conditional.go).
func (s *Store) newWriter(ctx context.Context, key string, chunk int, contentType string, ifAbsent bool) *storage.Writer {
	lim := &attemptLimiter{max: s.cfg.MaxAttempts}
	obj := s.bucket.Object(key)
	if ifAbsent {
		obj = obj.If(absent)
	}
	w := obj.Retryer(storage.WithErrorFunc(lim.shouldRetry)).NewWriter(ctx)
	w.ChunkSize = chunk
	w.ProgressFunc = lim.progress
	w.ContentType = contentType
	return w
}

// chunkSize picks the Writer's chunk. The Writer allocates a buffer of that
// size, so a body known to be small gets a chunk just larger than itself
// (the SDK then sends it in one request) instead of a full part.
func chunkSize(partSize, size int64) int {
	chunk := roundUp(partSize, gcsChunk)
	if size >= 0 && size < chunk {
		chunk = roundUp(size+1, gcsChunk)
	}
	return int(chunk)
}

func roundUp(n, m int64) int64 {
	if n <= 0 {
		return m
	}
	return (n + m - 1) / m * m
}

// attemptLimiter bounds upload retries by MaxAttempts. The SDK applies
// WithMaxAttempts to every call except uploads, which it retries until the
// context ends (single request) or ChunkRetryDeadline passes (resumable
// chunk). The count restarts whenever a chunk is acknowledged, so the bound
// is per request, as for every other call.
type attemptLimiter struct {
	max    int
	failed atomic.Int64
}

func (l *attemptLimiter) shouldRetry(err error) bool {
	return storage.ShouldRetry(err) && l.failed.Add(1) < int64(l.max)
}

func (l *attemptLimiter) progress(int64) { l.failed.Store(0) }

// bodyReader remembers the body's own error, to tell it from an upload
// error in io.Copy's result.
type bodyReader struct {
	r   io.Reader
	err error
}

func (b *bodyReader) Read(p []byte) (int, error) {
	n, err := b.r.Read(p)
	if err != nil && err != io.EOF {
		b.err = err
	}
	return n, err
}

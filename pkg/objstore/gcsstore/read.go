package gcsstore

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"time"

	"cloud.google.com/go/storage"

	"github.com/basin-csi/basin/pkg/objstore"
)

// Read streams a byte range of one object version.
//
// With IfVersion the request carries ifGenerationMatch, so GCS answers 412
// once the object changed, and the reader pins that generation for its
// internal reopen-on-error retries. Every read also checks the generation
// in the response against IfVersion: fake-gcs-server ignores read
// preconditions, and a mixed-version read must be impossible either way.
func (s *Store) Read(ctx context.Context, key string, opts objstore.ReadOptions) (io.ReadCloser, objstore.ObjectInfo, error) {
	if err := checkKey(key); err != nil {
		return nil, objstore.ObjectInfo{}, err
	}
	if opts.Offset < 0 {
		return nil, objstore.ObjectInfo{}, fmt.Errorf("%w: negative offset %d", objstore.ErrInvalidRange, opts.Offset)
	}
	length := opts.Length
	if length < 0 {
		length = -1
	}
	// ReadCompressed: serve the stored bytes even for gzip-encoded objects,
	// so offsets and sizes agree with Stat and List.
	obj := s.bucket.Object(key).ReadCompressed(true)
	gen := int64(-1)
	if opts.IfVersion != "" {
		g, err := parseGeneration(opts.IfVersion)
		if err != nil {
			return nil, objstore.ObjectInfo{}, fmt.Errorf("gcsstore: read %q: %w", key, err)
		}
		gen = g
		obj = obj.If(storage.Conditions{GenerationMatch: gen})
	}

	r, cancel, err := s.openRange(ctx, obj, opts.Offset, length)
	if errors.Is(err, objstore.ErrInvalidRange) {
		// GCS answers 416 for a range starting at the end, which the
		// contract allows (empty body). Tell the two cases apart by size.
		return s.readAtEnd(ctx, key, gen, opts.Offset)
	}
	if err != nil {
		return nil, objstore.ObjectInfo{}, err
	}
	info := objstore.ObjectInfo{
		Key:     key,
		Size:    r.Attrs.Size,
		Version: formatGeneration(r.Attrs.Generation),
		ModTime: modTime(r.Attrs.LastModified),
	}
	if gen >= 0 && r.Attrs.Generation != gen {
		_ = r.Close()
		cancel()
		return nil, objstore.ObjectInfo{}, fmt.Errorf("gcsstore: read %q: %w: have generation %d, want %d",
			key, objstore.ErrPreconditionFailed, r.Attrs.Generation, gen)
	}
	if opts.Offset > info.Size {
		// Only reachable with Length == 0, which the SDK sends as a HEAD
		// without a Range header.
		_ = r.Close()
		cancel()
		return nil, objstore.ObjectInfo{}, fmt.Errorf("gcsstore: read %q: %w: offset %d, size %d",
			key, objstore.ErrInvalidRange, opts.Offset, info.Size)
	}
	body := &mappedReader{r: r, key: key}
	return objstore.NewStallReader(body, s.cfg.RequestTimeout, cancel), info, nil
}

// openRange opens the reader, waiting at most RequestTimeout for the
// response headers. On success the returned cancel func owns the reader's
// context (the stall reader calls it on Close).
func (s *Store) openRange(ctx context.Context, obj *storage.ObjectHandle, offset, length int64) (*storage.Reader, context.CancelFunc, error) {
	rctx, cancel := context.WithCancel(ctx)
	timer := time.AfterFunc(s.cfg.RequestTimeout, cancel)
	r, err := obj.NewRangeReader(rctx, offset, length)
	if !timer.Stop() && ctx.Err() == nil {
		// The timer fired: no headers within RequestTimeout.
		if r != nil {
			_ = r.Close()
		}
		cancel()
		return nil, nil, fmt.Errorf("gcsstore: read %q: %w: no response within %v",
			obj.ObjectName(), objstore.ErrUnavailable, s.cfg.RequestTimeout)
	}
	if err != nil {
		cancel()
		return nil, nil, mapErr(opRead, obj.ObjectName(), err)
	}
	return r, cancel, nil
}

// readAtEnd handles a 416: an empty body when offset is exactly the size
// (including any offset on an empty object read with a length),
// ErrInvalidRange beyond it.
func (s *Store) readAtEnd(ctx context.Context, key string, gen, offset int64) (io.ReadCloser, objstore.ObjectInfo, error) {
	obj := s.bucket.Object(key)
	if gen >= 0 {
		obj = obj.If(storage.Conditions{GenerationMatch: gen})
	}
	sctx, cancel := s.requestCtx(ctx)
	defer cancel()
	attrs, err := obj.Attrs(sctx)
	if err != nil {
		return nil, objstore.ObjectInfo{}, mapErr(opRead, key, err)
	}
	if gen >= 0 && attrs.Generation != gen {
		return nil, objstore.ObjectInfo{}, fmt.Errorf("gcsstore: read %q: %w: have generation %d, want %d",
			key, objstore.ErrPreconditionFailed, attrs.Generation, gen)
	}
	if offset != attrs.Size {
		return nil, objstore.ObjectInfo{}, fmt.Errorf("gcsstore: read %q: %w: offset %d, size %d",
			key, objstore.ErrInvalidRange, offset, attrs.Size)
	}
	return http.NoBody, infoFromAttrs(attrs), nil
}

// mappedReader maps the SDK reader's errors to objstore sentinels.
type mappedReader struct {
	r   *storage.Reader
	key string
}

func (m *mappedReader) Read(p []byte) (int, error) {
	n, err := m.r.Read(p)
	if err != nil && err != io.EOF {
		err = mapErr(opRead, m.key, err)
	}
	return n, err
}

func (m *mappedReader) Close() error { return m.r.Close() }

package objstoretest

import (
	"context"
	"fmt"
	"io"
	"sync"

	"github.com/basin-csi/basin/pkg/objstore"
)

// StartStream implements objstore.Store: parts are kept in memory and the
// object appears at Complete. Every part is a call of OpStreamPart (its
// latency, hook and injected error apply); Complete is a call of OpPut.
func (f *Fake) StartStream(ctx context.Context, key string, src io.ReaderAt, opts objstore.StreamOptions) (objstore.Stream, error) {
	if err := checkKey(key); err != nil {
		return nil, err
	}
	partSize, conc := opts.Or(objstore.DefaultPartSize, objstore.DefaultUploadConcurrency)
	return objstore.NewPartStream(ctx, src, &fakeSink{f: f, key: key, meta: opts.Metadata, parts: map[int][]byte{}}, partSize, conc), nil
}

// fakeSink is the fake's multipart upload.
type fakeSink struct {
	// constant
	f    *Fake
	key  string
	meta map[string]string

	mu    sync.Mutex
	parts map[int][]byte // guarded by mu
}

func (s *fakeSink) Begin(context.Context) error { return nil }

func (s *fakeSink) Part(ctx context.Context, n int, _ int64, body *io.SectionReader) error {
	if err := s.f.begin(ctx, OpStreamPart, s.key); err != nil {
		return err
	}
	data, err := io.ReadAll(body)
	if err != nil {
		return fmt.Errorf("objstoretest: stream %q part %d: %w", s.key, n, err)
	}
	s.mu.Lock()
	s.parts[n] = data
	s.mu.Unlock()
	return nil
}

func (s *fakeSink) Commit(ctx context.Context, parts int) (objstore.ObjectInfo, error) {
	if err := s.f.begin(ctx, OpPut, s.key); err != nil {
		return objstore.ObjectInfo{}, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	var data []byte
	for n := 1; n <= parts; n++ {
		p, ok := s.parts[n]
		if !ok {
			return objstore.ObjectInfo{}, fmt.Errorf("objstoretest: stream %q: part %d missing", s.key, n)
		}
		data = append(data, p...)
	}
	return s.f.store(s.key, data, s.meta), nil
}

func (s *fakeSink) Abort(context.Context) {
	s.mu.Lock()
	s.parts = nil
	s.mu.Unlock()
}

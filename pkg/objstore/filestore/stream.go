package filestore

import (
	"context"
	"io"

	"github.com/basin-csi/basin/pkg/objstore"
)

// StartStream implements objstore.Store: parts are copied into a temporary
// file next to the key as the source is extended (in parallel, each at its
// offset), and Complete fsyncs it and renames it over the key, as Put does.
func (s *Store) StartStream(ctx context.Context, key string, src io.ReaderAt, opts objstore.StreamOptions) (objstore.Stream, error) {
	t, err := s.begin(ctx, "stream", key)
	if err != nil {
		return nil, err
	}
	if err := writeMeta(t.f, opts.Metadata); err != nil {
		t.discard()
		return nil, mapErr("stream", key, err)
	}
	partSize, conc := opts.Or(objstore.DefaultPartSize, objstore.DefaultUploadConcurrency)
	return objstore.NewPartStream(ctx, src, fileSink{t}, partSize, conc), nil
}

// fileSink writes the parts into the temporary file.
type fileSink struct{ t *tempObject }

func (k fileSink) Begin(context.Context) error { return nil }

func (k fileSink) Part(ctx context.Context, _ int, off int64, body *io.SectionReader) error {
	if _, err := io.Copy(io.NewOffsetWriter(k.t.f, off), ctxReader{ctx: ctx, r: body}); err != nil {
		return mapErr(k.t.op, k.t.key, err)
	}
	return nil
}

func (k fileSink) Commit(context.Context, int) (objstore.ObjectInfo, error) {
	return k.t.commit()
}

func (k fileSink) Abort(context.Context) { k.t.discard() }

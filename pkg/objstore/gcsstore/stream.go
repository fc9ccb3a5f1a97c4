package gcsstore

import (
	"context"
	"fmt"
	"io"

	"cloud.google.com/go/storage"

	"github.com/basin-csi/basin/pkg/objstore"
)

// StartStream implements objstore.Store with the SDK's Writer: a resumable
// upload in chunks of PartSize, fed part by part as the source is
// extended. A resumable upload has no parallel parts, so the stream runs
// one part at a time (opts.Concurrency is not used); the Writer buffers one
// chunk. Complete closes the Writer (the object appears then); Abort
// cancels it before it is finalised, so the previous object stays.
func (s *Store) StartStream(ctx context.Context, key string, src io.ReaderAt, opts objstore.StreamOptions) (objstore.Stream, error) {
	if err := checkKey(key); err != nil {
		return nil, err
	}
	partSize, _ := opts.Or(s.cfg.PartSize, 1)
	wctx, cancel := context.WithCancel(ctx)
	w := s.newWriter(wctx, key, chunkSize(partSize, -1), opts.ContentType, false)
	w.Metadata = opts.Metadata
	sink := &gcsSink{key: key, w: w, cancel: cancel}
	return objstore.NewPartStream(ctx, src, sink, partSize, 1), nil
}

// gcsSink feeds one Writer, in order.
type gcsSink struct {
	// constant
	key    string
	w      *storage.Writer
	cancel context.CancelFunc
}

func (k *gcsSink) Begin(context.Context) error { return nil }

func (k *gcsSink) Part(ctx context.Context, n int, _ int64, body *io.SectionReader) error {
	stop := context.AfterFunc(ctx, k.cancel) // an aborted stream stops the Writer
	defer stop()
	src := &bodyReader{r: body}
	if _, err := io.Copy(k.w, src); err != nil {
		if src.err != nil {
			return fmt.Errorf("gcsstore: stream %q part %d: reading source: %w", k.key, n, src.err)
		}
		return mapErr(opPut, k.key, err)
	}
	return nil
}

func (k *gcsSink) Commit(ctx context.Context, _ int) (objstore.ObjectInfo, error) {
	stop := context.AfterFunc(ctx, k.cancel) // Complete's deadline bounds the last chunk
	defer stop()
	defer k.cancel()
	if err := k.w.Close(); err != nil {
		return objstore.ObjectInfo{}, mapErr(opPut, k.key, err)
	}
	return infoFromAttrs(k.w.Attrs()), nil
}

func (k *gcsSink) Abort(context.Context) {
	k.cancel() // before Close, so the upload is not finalised
	_ = k.w.Close()
}

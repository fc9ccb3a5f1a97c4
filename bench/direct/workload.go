package direct

import (
	"context"
	"fmt"
	"io"
	"sync/atomic"
	"time"

	"github.com/basin-csi/basin/bench/dataset"
	"github.com/basin-csi/basin/bench/scenario"
	"github.com/basin-csi/basin/pkg/objstore"
	"github.com/basin-csi/basin/pkg/objstore/objstoretest"
)

// Get reads every key whole with one GET each, threads at once, taking
// keys in the given order.
func Get(ctx context.Context, store objstore.Store, keys []string, threads int) (scenario.Measure, error) {
	return each(ctx, len(keys), threads, 1<<20, func(ctx context.Context, i int, buf []byte) (int64, error) {
		return getWhole(ctx, store, keys[i], buf)
	})
}

// each calls fn for 0 ≤ i < n in order, threads at once, each thread with
// a buffer of bufSize bytes, and measures the calls that succeeded and the
// bytes fn moved.
func each(ctx context.Context, n, threads int, bufSize int64, fn func(ctx context.Context, i int, buf []byte) (int64, error)) (scenario.Measure, error) {
	var (
		m            scenario.Measure
		next, nbytes atomic.Int64
		done         atomic.Int64
	)
	start := time.Now()
	err := scenario.Parallel(ctx, threads, func(ctx context.Context) error {
		buf := make([]byte, bufSize)
		for ctx.Err() == nil {
			i := int(next.Add(1) - 1)
			if i >= n {
				return nil
			}
			moved, err := fn(ctx, i, buf)
			nbytes.Add(moved)
			if err != nil {
				return err
			}
			done.Add(1)
		}
		return nil
	})
	m.Elapsed = time.Since(start)
	m.Bytes, m.Files = nbytes.Load(), done.Load()
	return finish(ctx, m, err)
}

func getWhole(ctx context.Context, store objstore.Store, key string, buf []byte) (int64, error) {
	rc, _, err := store.Read(ctx, key, objstore.ReadOptions{Length: -1})
	if err != nil {
		return 0, err
	}
	defer func() { _ = rc.Close() }()
	n, err := io.CopyBuffer(io.Discard, struct{ io.Reader }{rc}, buf)
	if err != nil {
		return n, fmt.Errorf("get %s at %d: %w", key, n, err)
	}
	return n, nil
}

// Object is a key with its size, known beforehand so that no HEAD is
// sent.
type Object struct {
	Key  string `json:"key"`
	Size int64  `json:"size"`
}

// Download reads the objects one after the other, each by width parallel
// ranged GETs of part bytes into memory (objstoretest.RangedDownload).
// newDest, when set, gives each object's destination (a local file, as a
// download tool writes) and its cleanup; the destination's creation is
// not timed.
func Download(ctx context.Context, store objstore.Store, objs []Object, part int64, width int,
	newDest func() (io.WriterAt, func(), error)) (scenario.Measure, error) {
	var m scenario.Measure
	for _, o := range objs {
		var (
			to   io.WriterAt
			done = func() {}
		)
		if newDest != nil {
			var err error
			if to, done, err = newDest(); err != nil {
				return m, err
			}
		}
		start := time.Now()
		err := objstoretest.RangedDownload(ctx, store, objstore.ObjectInfo{Key: o.Key, Size: o.Size}, part, width, to)
		m.Elapsed += time.Since(start)
		done()
		if err != nil {
			return finish(ctx, m, fmt.Errorf("download %s: %w", o.Key, err))
		}
		m.Bytes += o.Size
		m.Files++
	}
	return finish(ctx, m, nil)
}

// Range is one read of Ranges: Size bytes of Objects[Object] at Off.
type Range struct {
	Object int   `json:"object"`
	Off    int64 `json:"off"`
}

// Ranges reads each range with one ranged GET of at most size bytes,
// threads at once.
func Ranges(ctx context.Context, store objstore.Store, objs []Object, ranges []Range, size int64, threads int) (scenario.Measure, error) {
	return each(ctx, len(ranges), threads, size, func(ctx context.Context, i int, buf []byte) (int64, error) {
		r := ranges[i]
		o := objs[r.Object]
		want := min(size, o.Size-r.Off)
		rc, _, err := store.Read(ctx, o.Key, objstore.ReadOptions{Offset: r.Off, Length: want})
		if err != nil {
			return 0, err
		}
		defer func() { _ = rc.Close() }()
		n, err := io.ReadFull(rc, buf[:want])
		if err != nil {
			return int64(n), fmt.Errorf("get %s at %d: %w", o.Key, r.Off, err)
		}
		return int64(n), nil
	})
}

// Put stores the content set generates for content[i] under keys[i],
// one object after the other; each Put returns once its object is in the
// bucket. An empty content means keys themselves.
func Put(ctx context.Context, store objstore.Store, set dataset.Set, keys, content []string) (scenario.Measure, error) {
	content, err := contentKeys(keys, content)
	if err != nil {
		return scenario.Measure{}, err
	}
	var m scenario.Measure
	start := time.Now()
	for i := 0; i < len(keys) && ctx.Err() == nil; i++ {
		_, err := store.Put(ctx, keys[i], set.Content(content[i], set.FileSize), objstore.PutOptions{Size: set.FileSize})
		if err != nil {
			m.Elapsed = time.Since(start)
			return finish(ctx, m, fmt.Errorf("put %s: %w", keys[i], err))
		}
		m.Bytes += set.FileSize
		m.Files++
	}
	m.Elapsed = time.Since(start)
	return finish(ctx, m, nil)
}

// Verify checks that each of keys holds the content set generates for
// content[i] (an empty content: for the key itself).
func Verify(ctx context.Context, store objstore.Store, set dataset.Set, keys, content []string) error {
	content, err := contentKeys(keys, content)
	if err != nil {
		return err
	}
	for i, k := range keys {
		rc, _, err := store.Read(ctx, k, objstore.ReadOptions{Length: -1})
		if err != nil {
			return err
		}
		err = set.Verify(content[i], rc)
		_ = rc.Close()
		if err != nil {
			return fmt.Errorf("wrong data in %s: %w", k, err)
		}
	}
	return nil
}

func contentKeys(keys, content []string) ([]string, error) {
	switch len(content) {
	case 0:
		return keys, nil
	case len(keys):
		return content, nil
	}
	return nil, fmt.Errorf("direct: %d content keys for %d objects", len(content), len(keys))
}

// finish returns err, or, when the context ended the workload, marks a
// passed deadline as partial (scenario.Stopped).
func finish(ctx context.Context, m scenario.Measure, err error) (scenario.Measure, error) {
	if ctx.Err() != nil {
		return m, scenario.Stopped(ctx, &m)
	}
	return m, err
}

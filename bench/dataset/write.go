package dataset

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"sync/atomic"
)

// Progress is told how many objects of a set are done.
type Progress func(set Set, done int)

// Present reports whether sink already holds a complete copy of set (its
// marker matches).
func Present(ctx context.Context, sink Sink, set Set) bool {
	b, err := sink.Get(ctx, set.markerKey())
	if err != nil {
		return false
	}
	want, err := json.Marshal(set)
	return err == nil && bytes.Equal(bytes.TrimSpace(b), want)
}

// Write generates set into sink with workers parallel uploads, unless it is
// already Present, and writes the marker last. Objects of an earlier,
// different set of the same name are deleted first, so a directory listing
// shows exactly this set. It reports whether it wrote.
func Write(ctx context.Context, sink Sink, set Set, workers int, progress Progress) (bool, error) {
	if err := set.Validate(); err != nil {
		return false, err
	}
	if Present(ctx, sink, set) {
		return false, nil
	}
	if err := sink.Clear(ctx, set.Prefix()); err != nil {
		return false, fmt.Errorf("dataset: clear %s in %s: %w", set.Prefix(), sink, err)
	}
	var done atomic.Int64
	err := forEach(ctx, set.Files, workers, func(ctx context.Context, i int) error {
		key := set.Key(i)
		body, size, err := set.Object(key)
		if err != nil {
			return fmt.Errorf("dataset: generate %s: %w", key, err)
		}
		if err := sink.Put(ctx, key, size, body); err != nil {
			return fmt.Errorf("dataset: put %s into %s: %w", key, sink, err)
		}
		if n := done.Add(1); progress != nil && (n%1000 == 0 || int(n) == set.Files) {
			progress(set, int(n))
		}
		return nil
	})
	if err != nil {
		return false, err
	}
	marker, err := json.Marshal(set)
	if err != nil {
		return false, err
	}
	if err := sink.Put(ctx, set.markerKey(), int64(len(marker)), bytes.NewReader(marker)); err != nil {
		return false, fmt.Errorf("dataset: marker of %s: %w", set.Name, err)
	}
	return true, nil
}

// forEach calls fn for 0..n-1 on workers goroutines and returns the first
// error; after an error the remaining indexes are not started.
func forEach(ctx context.Context, n, workers int, fn func(context.Context, int) error) error {
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	var (
		next atomic.Int64
		wg   sync.WaitGroup
	)
	for range max(workers, 1) {
		wg.Go(func() {
			for {
				i := int(next.Add(1) - 1)
				if i >= n || ctx.Err() != nil {
					return
				}
				if err := fn(ctx, i); err != nil {
					cancel(err)
					return
				}
			}
		})
	}
	wg.Wait()
	return context.Cause(ctx)
}

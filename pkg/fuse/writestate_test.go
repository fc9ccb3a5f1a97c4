package fuse

import (
	"bytes"
	"context"
	"sync"
	"testing"

	"github.com/basin-csi/basin/pkg/objstore"
)

// TestWriteStateReadsSeeWholeChanges: reads of a write state, which do
// not take its mutex (they must not wait for an upload), still see every
// write and truncate whole: a read returns nothing or one whole block as
// written, never a mix of two blocks, nor zeros where a truncate and the
// write after it were half seen.
func TestWriteStateReadsSeeWholeChanges(t *testing.T) {
	store, _ := newFileStore(t)
	fsys, err := newFS(Config{}, store, newFakeCache(store, t.TempDir(), 0, 0, false))
	if err != nil {
		t.Fatal(err)
	}
	w := newWriteState(&fileNode{fsys: fsys}, 1, objstore.ObjectInfo{})
	const block, rounds, readers = 256 << 10, 300, 2
	ctx := context.Background()
	done := make(chan struct{})
	var wg sync.WaitGroup
	errs := make(chan string, readers)
	for range readers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			buf := make([]byte, block)
			for {
				select {
				case <-done:
					return
				default:
				}
				n, err := w.readAt(ctx, buf, 0)
				if err != nil {
					errs <- "read: " + err.Error()
					return
				}
				if n == 0 {
					continue
				}
				if n != block || (buf[0] != 'a' && buf[0] != 'b') || bytes.Count(buf, buf[:1]) != block {
					errs <- "a read saw a change half done"
					return
				}
			}
		}()
	}
	for i := range rounds {
		if err := w.truncate(ctx, 0); err != nil {
			t.Fatal(err)
		}
		if err := w.write(ctx, bytes.Repeat([]byte{byte('a' + i%2)}, block), 0); err != nil {
			t.Fatal(err)
		}
	}
	close(done)
	wg.Wait()
	close(errs)
	for e := range errs {
		t.Error(e)
	}
	w.mu.Lock()
	_ = w.file.Close()
	w.mu.Unlock()
}

package epoch

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"github.com/basin-csi/basin/bench/dataset"
	"github.com/basin-csi/basin/bench/scenario"
)

// Result is one epoch's outcome.
type Result struct {
	Elapsed time.Duration
	Files   int64 // files read, whether they failed or not
	Bytes   int64
	Errors  int64 // files that failed to read or were short
}

// Keys returns the keys of set relative to root in the order of seed:
// root is the directory the bucket is mounted at (the keys as they are),
// or the set's own directory (the keys without the set's prefix).
func Keys(set dataset.Set, seed uint64, inSetDir bool) []string {
	keys := scenario.Shuffled(set.Keys(), seed)
	if inSetDir {
		for i, k := range keys {
			keys[i] = k[len(set.Prefix()):]
		}
	}
	return keys
}

// Read reads every file of keys under root once, whole, with threads
// readers taking the next key in turn. A file that fails or is not
// set.FileSize bytes long counts in Errors and is logged on stderr; the
// epoch goes on. midway, when set, runs once half the files are read.
// Read returns an error only when ctx ends first.
func Read(ctx context.Context, root string, keys []string, set dataset.Set, threads int, midway func()) (Result, error) {
	var (
		next, done, nbytes, failed atomic.Int64
		once                       sync.Once
		wg                         sync.WaitGroup
	)
	start := time.Now()
	for range threads {
		wg.Go(func() {
			buf := make([]byte, 1<<20)
			for ctx.Err() == nil {
				i := int(next.Add(1) - 1)
				if i >= len(keys) {
					return
				}
				m, err := scenario.ReadWhole(filepath.Join(root, filepath.FromSlash(keys[i])), buf)
				nbytes.Add(m)
				if err != nil || m != set.FileSize {
					failed.Add(1)
					fmt.Fprintf(os.Stderr, "%s: %d bytes, %v\n", keys[i], m, err)
				}
				if done.Add(1) == int64(len(keys)/2) && midway != nil {
					once.Do(midway)
				}
			}
		})
	}
	wg.Wait()
	r := Result{Elapsed: time.Since(start), Files: done.Load(), Bytes: nbytes.Load(), Errors: failed.Load()}
	if err := ctx.Err(); err != nil {
		return r, fmt.Errorf("epoch not done: %w", err)
	}
	return r, nil
}

// VerifySample compares 20 of keys under root (the first 64 MiB of each
// file) with the data set's content; missing is what the keys lack of the
// set's own keys ("", or set.Prefix() for keys from Keys(set, seed, true)).
func VerifySample(root string, set dataset.Set, keys []string, missing string) error {
	step := max(1, len(keys)/20)
	for i := 0; i < len(keys); i += step {
		full := missing + keys[i]
		n := min(set.FileSize, 64<<20)
		f, err := os.Open(filepath.Join(root, filepath.FromSlash(keys[i])))
		if err != nil {
			return err
		}
		got := make([]byte, n)
		_, err = io.ReadFull(f, got)
		_ = f.Close()
		if err != nil {
			return fmt.Errorf("verify %s: %w", keys[i], err)
		}
		want, _ := io.ReadAll(io.LimitReader(set.Content(full, set.FileSize), n))
		if !bytes.Equal(got, want) {
			return fmt.Errorf("verify %s: wrong content", keys[i])
		}
	}
	return nil
}

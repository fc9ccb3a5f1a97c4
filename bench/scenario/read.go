package scenario

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"sync"
	"sync/atomic"
	"time"
)

// readBuf is the size of one read(2): what dd bs=1M or a data loader uses.
const readBuf = 1 << 20

// ReadFiles reads every path whole, with threads workers taking paths in
// the given order (shuffle them first for an epoch).
func ReadFiles(ctx context.Context, paths []string, threads int) (Measure, error) {
	var (
		m            Measure
		next, nbytes atomic.Int64
		files        atomic.Int64
	)
	start := time.Now()
	err := Parallel(ctx, threads, func(ctx context.Context) error {
		buf := make([]byte, readBuf)
		for ctx.Err() == nil {
			i := int(next.Add(1) - 1)
			if i >= len(paths) {
				return nil
			}
			n, err := ReadWhole(paths[i], buf)
			nbytes.Add(n)
			if err != nil {
				return err
			}
			files.Add(1)
		}
		return nil
	})
	m.Elapsed = time.Since(start)
	m.Bytes, m.Files = nbytes.Load(), files.Load()
	if err != nil {
		return m, err
	}
	return m, Stopped(ctx, &m)
}

// ReadWhole reads the file at path to its end with buf, returning the
// bytes read.
func ReadWhole(path string, buf []byte) (int64, error) {
	f, err := os.Open(path)
	if err != nil {
		return 0, err
	}
	defer func() { _ = f.Close() }()
	var total int64
	for {
		n, err := f.Read(buf)
		total += int64(n)
		if errors.Is(err, io.EOF) {
			return total, nil
		}
		if err != nil {
			return total, fmt.Errorf("read %s at %d: %w", path, total, err)
		}
	}
}

// File is a path with its size, for RandomReads.
type File struct {
	Path string
	Size int64
}

// Range is one read of RandomReads.
type Range struct {
	File int // index into the files
	Off  int64
}

// RandomRanges returns n ranges of size bytes at 4 KiB-aligned offsets,
// fixed by seed, spread over files.
func RandomRanges(files []File, size int64, n int, seed uint64) []Range {
	rng := rand.New(rand.NewPCG(seed, ^seed))
	out := make([]Range, 0, n)
	for range n {
		f := rng.IntN(len(files))
		slots := max((files[f].Size-size)/4096, 0) + 1
		out = append(out, Range{File: f, Off: rng.Int64N(slots) * 4096})
	}
	return out
}

// RandomReads preads size bytes at each range with threads workers; each
// worker keeps its files open, as a loader reading from shards does.
func RandomReads(ctx context.Context, files []File, ranges []Range, size int64, threads int) (Measure, error) {
	var (
		m            Measure
		next, nbytes atomic.Int64
		reads        atomic.Int64
	)
	start := time.Now()
	err := Parallel(ctx, threads, func(ctx context.Context) error {
		buf := make([]byte, size)
		open := map[int]*os.File{}
		defer func() {
			for _, f := range open {
				_ = f.Close()
			}
		}()
		for ctx.Err() == nil {
			i := int(next.Add(1) - 1)
			if i >= len(ranges) {
				return nil
			}
			r := ranges[i]
			f, ok := open[r.File]
			if !ok {
				var err error
				if f, err = os.Open(files[r.File].Path); err != nil {
					return err
				}
				open[r.File] = f
			}
			want := min(size, files[r.File].Size-r.Off)
			n, err := f.ReadAt(buf[:want], r.Off)
			nbytes.Add(int64(n))
			if err != nil && (!errors.Is(err, io.EOF) || int64(n) != want) {
				return fmt.Errorf("pread %s at %d: %w", files[r.File].Path, r.Off, err)
			}
			reads.Add(1)
		}
		return nil
	})
	m.Elapsed = time.Since(start)
	m.Bytes, m.Files = nbytes.Load(), reads.Load()
	if err != nil {
		return m, err
	}
	return m, Stopped(ctx, &m)
}

// Parallel runs fn on threads goroutines and returns the first error;
// after it the others see their context cancelled.
func Parallel(ctx context.Context, threads int, fn func(context.Context) error) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var (
		wg    sync.WaitGroup
		once  sync.Once
		first error
	)
	for range max(threads, 1) {
		wg.Go(func() {
			if err := fn(ctx); err != nil {
				once.Do(func() { first = err; cancel() })
			}
		})
	}
	wg.Wait()
	return first
}

package scenario

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/basin-csi/basin/bench/dataset"
)

// Durable reports whether the object behind a written file (its path
// relative to the mount root, as a key) has reached the bucket with size
// bytes. Nil means "close is enough" (a local directory).
type Durable func(ctx context.Context, key string, size int64) (bool, error)

// WriteFiles writes every object of set below root/dir, one after another
// with 1 MiB writes, fsync and close, then waits until durable reports each
// one in the bucket. The time covers both, so a file system that uploads
// after close is not flattered.
func WriteFiles(ctx context.Context, root, dir string, set dataset.Set, durable Durable) (Measure, error) {
	key := func(i int) string { return dir + "/" + filepath.Base(set.Key(i)) }
	return writeAll(ctx, root, set, durable, key, writeFile)
}

// CreateFiles makes every file of set below root/dir in key order, one
// after another as cp -r does: the file's directory created when new,
// the file opened with O_CREAT|O_EXCL, written, closed (no fsync). Then
// it waits until durable reports each one in the bucket; the time covers
// both.
func CreateFiles(ctx context.Context, root, dir string, set dataset.Set, durable Durable) (Measure, error) {
	key := func(i int) string { return dir + "/" + strings.TrimPrefix(set.Key(i), set.Prefix()) }
	made := map[string]bool{}
	create := func(path string, body io.Reader, buf []byte) (int64, error) {
		if d := filepath.Dir(path); !made[d] {
			if err := os.MkdirAll(d, 0o755); err != nil {
				return 0, err
			}
			made[d] = true
		}
		f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
		if err != nil {
			return 0, err
		}
		n, err := io.CopyBuffer(struct{ io.Writer }{f}, body, buf)
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return n, fmt.Errorf("create %s: %w", path, err)
		}
		return n, nil
	}
	return writeAll(ctx, root, set, durable, key, create)
}

// writeAll writes file i of set to root/key(i) with write, one after
// another, then waits until durable reports each one in the bucket; the
// time covers both.
func writeAll(ctx context.Context, root string, set dataset.Set, durable Durable, key func(int) string,
	write func(path string, body io.Reader, buf []byte) (int64, error)) (Measure, error) {
	var m Measure
	buf := make([]byte, readBuf)
	start := time.Now()
	keys := make([]string, 0, set.Files)
	for i := 0; i < set.Files && ctx.Err() == nil; i++ {
		k := key(i)
		n, err := write(filepath.Join(root, k), set.Content(set.Key(i), set.FileSize), buf)
		m.Bytes += n
		if err != nil {
			m.Elapsed = time.Since(start)
			return m, err
		}
		keys = append(keys, k)
		m.Files++
	}
	for _, k := range keys {
		if err := waitDurable(ctx, durable, k, set.FileSize); err != nil {
			m.Elapsed = time.Since(start)
			if ctx.Err() != nil {
				return m, Stopped(ctx, &m)
			}
			return m, err
		}
	}
	m.Elapsed = time.Since(start)
	return m, Stopped(ctx, &m)
}

func writeFile(path string, body io.Reader, buf []byte) (int64, error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return 0, err
	}
	f, err := os.Create(path)
	if err != nil {
		return 0, err
	}
	n, err := io.CopyBuffer(struct{ io.Writer }{f}, body, buf)
	if err != nil {
		_ = f.Close()
		return n, fmt.Errorf("write %s: %w", path, err)
	}
	if err := f.Sync(); err != nil {
		_ = f.Close()
		return n, fmt.Errorf("fsync %s: %w", path, err)
	}
	if err := f.Close(); err != nil {
		return n, fmt.Errorf("close %s: %w", path, err)
	}
	return n, nil
}

func waitDurable(ctx context.Context, durable Durable, key string, size int64) error {
	if durable == nil {
		return nil
	}
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for {
		ok, err := durable(ctx, key, size)
		if err != nil {
			return fmt.Errorf("check %s in the bucket: %w", key, err)
		}
		if ok {
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-tick.C:
		}
	}
}

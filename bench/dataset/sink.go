package dataset

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/basin-csi/basin/pkg/objstore"
)

// Sink is where a data set is written.
type Sink interface {
	// Put stores size bytes from body under key.
	Put(ctx context.Context, key string, size int64, body io.Reader) error
	// Get returns a small object (a marker) whole; a missing one is an error.
	Get(ctx context.Context, key string) ([]byte, error)
	// Clear deletes every object whose key starts with prefix.
	Clear(ctx context.Context, prefix string) error
	// String names the sink for logs.
	String() string
}

// DirSink writes objects as files under Root, keys as relative paths.
type DirSink struct{ Root string }

func (d DirSink) path(key string) (string, error) {
	p := filepath.Join(d.Root, filepath.FromSlash(key))
	if !strings.HasPrefix(p, filepath.Clean(d.Root)+string(filepath.Separator)) {
		return "", fmt.Errorf("dataset: key %q escapes %s", key, d.Root)
	}
	return p, nil
}

// Put implements Sink.
func (d DirSink) Put(_ context.Context, key string, _ int64, body io.Reader) error {
	p, err := d.path(key)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		return err
	}
	f, err := os.Create(p)
	if err != nil {
		return err
	}
	w := bufio.NewWriterSize(f, 1<<20)
	if _, err := io.Copy(w, body); err != nil {
		_ = f.Close()
		return err
	}
	if err := w.Flush(); err != nil {
		_ = f.Close()
		return err
	}
	return f.Close()
}

// Get implements Sink.
func (d DirSink) Get(_ context.Context, key string) ([]byte, error) {
	p, err := d.path(key)
	if err != nil {
		return nil, err
	}
	return os.ReadFile(p)
}

// Clear implements Sink.
func (d DirSink) Clear(_ context.Context, prefix string) error {
	p, err := d.path(strings.TrimSuffix(prefix, "/"))
	if err != nil {
		return err
	}
	return os.RemoveAll(p)
}

func (d DirSink) String() string { return "dir " + d.Root }

// StoreSink writes objects into a bucket.
type StoreSink struct {
	Store objstore.Store
	// Name describes the bucket for logs, e.g. "s3://bench".
	Name string
}

// Put implements Sink.
func (s StoreSink) Put(ctx context.Context, key string, size int64, body io.Reader) error {
	_, err := s.Store.Put(ctx, key, body, objstore.PutOptions{Size: size})
	return err
}

// Get implements Sink.
func (s StoreSink) Get(ctx context.Context, key string) ([]byte, error) {
	r, _, err := s.Store.Read(ctx, key, objstore.ReadOptions{Length: -1})
	if err != nil {
		return nil, err
	}
	defer func() { _ = r.Close() }()
	return io.ReadAll(r)
}

// Clear implements Sink.
func (s StoreSink) Clear(ctx context.Context, prefix string) error {
	_, err := s.Store.DeletePrefix(ctx, prefix)
	return err
}

func (s StoreSink) String() string { return s.Name }

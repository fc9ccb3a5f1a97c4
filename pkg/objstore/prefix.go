package objstore

import (
	"context"
	"fmt"
	"io"
	"strings"
)

// WithPrefix returns a view of s in which key k is s's key prefix+k: a volume
// that is a "directory" of a bucket. The prefix is used as a directory:
// leading slashes are dropped and a missing trailing slash is added; an
// empty prefix returns s itself.
//
// Keys passed in and returned (ObjectInfo.Key, CommonPrefixes) are relative
// to the prefix. The directory marker of the prefix itself (key prefix in s)
// is not an object of the view: List hides it and the empty key is
// ErrInvalidKey; DeletePrefix("") removes it with everything else. The view
// owns s: Close closes s.
func WithPrefix(s Store, prefix string) Store {
	prefix = strings.TrimLeft(prefix, "/")
	if prefix == "" {
		return s
	}
	if !strings.HasSuffix(prefix, "/") {
		prefix += "/"
	}
	return &prefixStore{s: s, prefix: prefix}
}

// prefixStore is the view WithPrefix returns.
type prefixStore struct {
	// constant
	s      Store
	prefix string // non-empty, ends with '/'
}

// full maps a view key to s's key.
func (p *prefixStore) full(key string) (string, error) {
	if key == "" {
		return "", fmt.Errorf("objstore: empty key below prefix %q: %w", p.prefix, ErrInvalidKey)
	}
	return p.prefix + key, nil
}

// rel maps info from s to the view.
func (p *prefixStore) rel(info ObjectInfo) ObjectInfo {
	info.Key = strings.TrimPrefix(info.Key, p.prefix)
	return info
}

func (p *prefixStore) Stat(ctx context.Context, key string) (ObjectInfo, error) {
	full, err := p.full(key)
	if err != nil {
		return ObjectInfo{}, err
	}
	info, err := p.s.Stat(ctx, full)
	return p.rel(info), err
}

func (p *prefixStore) Read(ctx context.Context, key string, opts ReadOptions) (io.ReadCloser, ObjectInfo, error) {
	full, err := p.full(key)
	if err != nil {
		return nil, ObjectInfo{}, err
	}
	rc, info, err := p.s.Read(ctx, full, opts)
	return rc, p.rel(info), err
}

func (p *prefixStore) List(ctx context.Context, opts ListOptions) (ListPage, error) {
	opts.Prefix = p.prefix + opts.Prefix
	page, err := p.s.List(ctx, opts)
	if err != nil {
		return ListPage{}, err
	}
	objects := page.Objects[:0]
	for _, o := range page.Objects {
		if o.Key != p.prefix { // the prefix's own marker
			objects = append(objects, p.rel(o))
		}
	}
	page.Objects = objects
	for i, cp := range page.CommonPrefixes {
		page.CommonPrefixes[i] = strings.TrimPrefix(cp, p.prefix)
	}
	return page, nil
}

func (p *prefixStore) Put(ctx context.Context, key string, body io.Reader, opts PutOptions) (ObjectInfo, error) {
	full, err := p.full(key)
	if err != nil {
		return ObjectInfo{}, err
	}
	info, err := p.s.Put(ctx, full, body, opts)
	return p.rel(info), err
}

func (p *prefixStore) StartStream(ctx context.Context, key string, src io.ReaderAt, opts StreamOptions) (Stream, error) {
	full, err := p.full(key)
	if err != nil {
		return nil, err
	}
	st, err := p.s.StartStream(ctx, full, src, opts)
	if err != nil {
		return nil, err
	}
	return prefixStream{Stream: st, p: p}, nil
}

// prefixStream maps the completed object's key to the view.
type prefixStream struct {
	Stream
	p *prefixStore
}

func (s prefixStream) Complete(ctx context.Context, size int64) (ObjectInfo, error) {
	info, err := s.Stream.Complete(ctx, size)
	return s.p.rel(info), err
}

func (p *prefixStore) Delete(ctx context.Context, key string) error {
	full, err := p.full(key)
	if err != nil {
		return err
	}
	return p.s.Delete(ctx, full)
}

func (p *prefixStore) Copy(ctx context.Context, src, dst string) (ObjectInfo, error) {
	fullSrc, err := p.full(src)
	if err != nil {
		return ObjectInfo{}, err
	}
	fullDst, err := p.full(dst)
	if err != nil {
		return ObjectInfo{}, err
	}
	info, err := p.s.Copy(ctx, fullSrc, fullDst)
	return p.rel(info), err
}

func (p *prefixStore) DeletePrefix(ctx context.Context, prefix string) (int, error) {
	return p.s.DeletePrefix(ctx, p.prefix+prefix)
}

func (p *prefixStore) Close() error { return p.s.Close() }

package filestore

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"syscall"

	"github.com/basin-csi/basin/pkg/objstore"
)

const (
	dirPerm  = 0o700
	filePerm = 0o600
	// copyChunk bounds how long Copy runs between context checks.
	copyChunk = 64 << 20
	// mkdirAttempts bounds retries when a concurrent Delete removes the
	// parent directory between its creation and the temporary file's.
	mkdirAttempts = 5
)

// Put implements objstore.Store: the body goes to a temporary file next to
// the target, is fsynced, and is renamed over the target.
func (s *Store) Put(ctx context.Context, key string, body io.Reader, opts objstore.PutOptions) (objstore.ObjectInfo, error) {
	return s.write(ctx, "put", key, opts.IfAbsent, func(f *os.File) error {
		n, err := io.Copy(f, ctxReader{ctx: ctx, r: body})
		if err != nil {
			return err
		}
		if opts.Size >= 0 && n != opts.Size {
			return fmt.Errorf("body has %d bytes, PutOptions.Size says %d", n, opts.Size)
		}
		return writeMeta(f, opts.Metadata)
	})
}

// Copy implements objstore.Store.
func (s *Store) Copy(ctx context.Context, src, dst string) (objstore.ObjectInfo, error) {
	if err := ctx.Err(); err != nil {
		return objstore.ObjectInfo{}, mapErr("copy", src, err)
	}
	in, info, err := s.open("copy", src)
	if err != nil {
		return objstore.ObjectInfo{}, err
	}
	defer func() { _ = in.Close() }()
	return s.write(ctx, "copy", dst, false, func(f *os.File) error {
		if err := writeMeta(f, info.Metadata); err != nil {
			return err
		}
		// io.CopyN between files uses copy_file_range.
		for left := info.Size; left > 0; left -= copyChunk {
			if err := ctx.Err(); err != nil {
				return err
			}
			if _, err := io.CopyN(f, in, min(left, copyChunk)); err != nil {
				return err
			}
		}
		return nil
	})
}

// ctxReader fails once ctx is done.
type ctxReader struct {
	ctx context.Context
	r   io.Reader
}

func (c ctxReader) Read(p []byte) (int, error) {
	if err := c.ctx.Err(); err != nil {
		return 0, err
	}
	return c.r.Read(p)
}

// write creates key's new content with fill and moves it into place;
// ifAbsent only where no object is (objstore.PutOptions.IfAbsent).
func (s *Store) write(ctx context.Context, op, key string, ifAbsent bool, fill func(*os.File) error) (objstore.ObjectInfo, error) {
	t, err := s.begin(ctx, op, key)
	if err != nil {
		return objstore.ObjectInfo{}, err
	}
	committed := false
	defer func() {
		if !committed {
			t.discard()
		}
	}()
	if err := fill(t.f); err != nil {
		return objstore.ObjectInfo{}, mapErr(op, key, err)
	}
	t.ifAbsent = ifAbsent
	info, err := t.commit()
	committed = err == nil
	return info, err
}

// tempObject is the new content of a key, in a temporary file next to it
// until commit moves it into place.
type tempObject struct {
	// constant
	s       *Store
	op, key string
	rel     string // key's path
	tmp     string // the temporary file's path
	f       *os.File
	// ifAbsent: commit links instead of renaming, so an existing key
	// fails it (conditional create).
	ifAbsent bool
}

// begin creates the temporary file of key's new content.
func (s *Store) begin(ctx context.Context, op, key string) (*tempObject, error) {
	if err := ctx.Err(); err != nil {
		return nil, mapErr(op, key, err)
	}
	rel, err := keyToPath(key)
	if err != nil {
		return nil, err
	}
	f, tmp, err := s.createTemp(filepath.Dir(rel))
	if err != nil {
		return nil, conflictErr(op, key, err)
	}
	return &tempObject{s: s, op: op, key: key, rel: rel, tmp: tmp, f: f}, nil
}

// commit makes the content durable and renames it over the key. On
// failure the caller discards it.
func (t *tempObject) commit() (objstore.ObjectInfo, error) {
	if err := t.f.Sync(); err != nil {
		return objstore.ObjectInfo{}, mapErr(t.op, t.key, err)
	}
	// Renaming keeps size, mtime and inode: the version is known now.
	fi, err := t.f.Stat()
	if err != nil {
		return objstore.ObjectInfo{}, mapErr(t.op, t.key, err)
	}
	if t.ifAbsent {
		// link(2) fails with EEXIST when the key's path exists: the
		// conditional create of the other stores. The temporary name
		// goes once the key holds the content.
		if err := t.s.root.Link(t.tmp, t.rel); err != nil {
			if errors.Is(err, fs.ErrExist) && t.s.isObject(t.rel) {
				return objstore.ObjectInfo{}, fmt.Errorf("filestore: %s %q: %w", t.op, t.key, objstore.ErrExists)
			}
			return objstore.ObjectInfo{}, conflictErr(t.op, t.key, err)
		}
		_ = t.s.root.Remove(t.tmp)
	} else if err := t.s.root.Rename(t.tmp, t.rel); err != nil {
		return objstore.ObjectInfo{}, conflictErr(t.op, t.key, err)
	}
	t.tmp = "" // nothing left to discard but the descriptor
	if err := t.f.Close(); err != nil {
		return objstore.ObjectInfo{}, mapErr(t.op, t.key, err)
	}
	t.s.syncDir(filepath.Dir(t.rel))
	return objectInfo(t.key, fi), nil
}

// isObject reports whether rel is a regular file: an object, as opposed
// to the directory of other keys ("a" when "a/b" exists).
func (s *Store) isObject(rel string) bool {
	fi, err := s.root.Lstat(rel)
	return err == nil && fi.Mode().IsRegular()
}

// discard removes the temporary file of content never committed.
func (t *tempObject) discard() {
	_ = t.f.Close()
	if t.tmp != "" {
		_ = t.s.root.Remove(t.tmp)
	}
}

// createTemp creates a fresh temporary file in dir, creating dir first.
func (s *Store) createTemp(dir string) (*os.File, string, error) {
	for attempt := 1; ; attempt++ {
		err := s.root.MkdirAll(dir, dirPerm)
		if err == nil {
			tmp := filepath.Join(dir, tempPrefix+strconv.FormatUint(rand.Uint64(), 16))
			var f *os.File
			f, err = s.root.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, filePerm)
			if err == nil {
				return f, tmp, nil
			}
		}
		// A concurrent Delete may prune dir between MkdirAll and OpenFile,
		// or inside MkdirAll between its mkdirat (EEXIST) and its check
		// that the existing entry is a directory. A real file in the way
		// fails every attempt and is reported by the last one.
		retry := errors.Is(err, fs.ErrNotExist) || errors.Is(err, fs.ErrExist)
		if !retry || attempt == mkdirAttempts {
			return nil, "", err
		}
	}
}

// syncDir makes a rename in dir durable; failures only cost durability.
func (s *Store) syncDir(dir string) {
	if d, err := s.root.Open(dir); err == nil {
		_ = d.Sync()
		_ = d.Close()
	}
}

// conflictErr maps the errors of a path that collides with a file or a
// directory of another key ("a" vs "a/b") to ErrInvalidKey.
func conflictErr(op, key string, err error) error {
	if errors.Is(err, syscall.ENOTDIR) || errors.Is(err, syscall.EISDIR) ||
		errors.Is(err, syscall.EEXIST) || errors.Is(err, syscall.ENOTEMPTY) {
		return fmt.Errorf("filestore: %s %q: a file and a directory would share a name: %w: %w", op, key, objstore.ErrInvalidKey, err)
	}
	return mapErr(op, key, err)
}

// DeletePrefix implements objstore.Store.
func (s *Store) DeletePrefix(ctx context.Context, prefix string) (int, error) {
	count := 0
	err := objstore.ListAll(ctx, s, objstore.ListOptions{Prefix: prefix}, func(page objstore.ListPage) error {
		for _, o := range page.Objects {
			if err := s.Delete(ctx, o.Key); err != nil {
				return err
			}
			count++
		}
		return nil
	})
	return count, err
}

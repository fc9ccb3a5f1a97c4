package filestore

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/fnv"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"syscall"

	"github.com/basin-csi/basin/pkg/objstore"
)

// Store is a directory served as a bucket. Safe for concurrent use, also by
// several processes sharing the directory.
type Store struct {
	// constant
	root *os.Root
	dir  string
}

var _ objstore.Store = (*Store)(nil)

// New opens the directory cfg.Bucket (absolute, existing) as a bucket.
// cfg.Backend must be BackendFile or empty; the other fields do not apply.
func New(cfg objstore.Config) (*Store, error) {
	if cfg.Backend != "" && cfg.Backend != objstore.BackendFile {
		return nil, fmt.Errorf("filestore: backend %q: %w", cfg.Backend, objstore.ErrInvalidConfig)
	}
	root, err := openDir(cfg.Bucket)
	if err != nil {
		return nil, err
	}
	return &Store{root: root, dir: cfg.Bucket}, nil
}

// openDir opens dir, which must be an absolute path to a directory.
func openDir(dir string) (*os.Root, error) {
	if !filepath.IsAbs(dir) {
		return nil, fmt.Errorf("filestore: bucket %q is not an absolute directory: %w", dir, objstore.ErrInvalidConfig)
	}
	fi, err := os.Stat(dir)
	if err != nil {
		return nil, mapErr("open bucket", dir, err)
	}
	if !fi.IsDir() {
		return nil, fmt.Errorf("filestore: bucket %q is not a directory: %w", dir, objstore.ErrInvalidConfig)
	}
	root, err := os.OpenRoot(dir)
	if err != nil {
		return nil, mapErr("open bucket", dir, err)
	}
	return root, nil
}

// Dir returns the bucket's directory.
func (s *Store) Dir() string { return s.dir }

// mapErr wraps a file system error with the sentinel it stands for.
func mapErr(op, key string, err error) error {
	var sentinel error
	switch {
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		return fmt.Errorf("filestore: %s %q: %w", op, key, err)
	case errors.Is(err, fs.ErrNotExist), errors.Is(err, syscall.ENOTDIR):
		sentinel = objstore.ErrNotFound
	case errors.Is(err, fs.ErrPermission):
		sentinel = objstore.ErrAccessDenied
	case errors.Is(err, syscall.ENAMETOOLONG):
		sentinel = objstore.ErrInvalidKey
	default:
		return fmt.Errorf("filestore: %s %q: %w", op, key, err)
	}
	return fmt.Errorf("filestore: %s %q: %w: %w", op, key, sentinel, err)
}

// objectInfo describes the regular file fi as the object key.
func objectInfo(key string, fi fs.FileInfo) objstore.ObjectInfo {
	return objstore.ObjectInfo{Key: key, Size: fi.Size(), Version: version(fi), ModTime: fi.ModTime()}
}

// version hashes what changes whenever the file is replaced or rewritten.
func version(fi fs.FileInfo) string {
	var b [32]byte
	binary.LittleEndian.PutUint64(b[0:], uint64(fi.Size()))
	binary.LittleEndian.PutUint64(b[8:], uint64(fi.ModTime().UnixNano()))
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		binary.LittleEndian.PutUint64(b[16:], st.Ino)
		binary.LittleEndian.PutUint64(b[24:], st.Dev)
	}
	h := fnv.New64a()
	_, _ = h.Write(b[:])
	return strconv.FormatUint(h.Sum64(), 16)
}

// open opens the regular file holding key; anything else is ErrNotFound.
func (s *Store) open(op, key string) (*os.File, objstore.ObjectInfo, error) {
	rel, err := keyToPath(key)
	if err != nil {
		return nil, objstore.ObjectInfo{}, err
	}
	f, err := s.root.Open(rel)
	if err != nil {
		return nil, objstore.ObjectInfo{}, mapErr(op, key, err)
	}
	fi, err := f.Stat()
	if err == nil && fi.Mode().IsRegular() {
		// Refuse a symbolic link as the last component, as listings do.
		var lfi fs.FileInfo
		if lfi, err = s.root.Lstat(rel); err == nil && os.SameFile(fi, lfi) {
			info := objectInfo(key, fi)
			if info.Metadata, err = readMeta(f); err == nil {
				return f, info, nil
			}
		}
	}
	_ = f.Close()
	if err != nil {
		return nil, objstore.ObjectInfo{}, mapErr(op, key, err)
	}
	return nil, objstore.ObjectInfo{}, fmt.Errorf("filestore: %s %q: not a regular file: %w", op, key, objstore.ErrNotFound)
}

// Stat implements objstore.Store.
func (s *Store) Stat(ctx context.Context, key string) (objstore.ObjectInfo, error) {
	if err := ctx.Err(); err != nil {
		return objstore.ObjectInfo{}, mapErr("stat", key, err)
	}
	f, info, err := s.open("stat", key)
	if err != nil {
		return objstore.ObjectInfo{}, err
	}
	_ = f.Close()
	return info, nil
}

// Read implements objstore.Store. The body reads the file opened at the
// call, so it keeps returning that version's bytes after an overwrite.
func (s *Store) Read(ctx context.Context, key string, opts objstore.ReadOptions) (io.ReadCloser, objstore.ObjectInfo, error) {
	if err := ctx.Err(); err != nil {
		return nil, objstore.ObjectInfo{}, mapErr("read", key, err)
	}
	f, info, err := s.open("read", key)
	if err != nil {
		return nil, objstore.ObjectInfo{}, err
	}
	if opts.IfVersion != "" && opts.IfVersion != info.Version {
		_ = f.Close()
		return nil, info, fmt.Errorf("filestore: read %q: version is %s, not %s: %w", key, info.Version, opts.IfVersion, objstore.ErrPreconditionFailed)
	}
	if opts.Offset < 0 || opts.Offset > info.Size {
		_ = f.Close()
		return nil, info, fmt.Errorf("filestore: read %q: offset %d of %d bytes: %w", key, opts.Offset, info.Size, objstore.ErrInvalidRange)
	}
	n := info.Size - opts.Offset
	if opts.Length >= 0 && opts.Length < n {
		n = opts.Length
	}
	return &body{ctx: ctx, f: f, r: io.NewSectionReader(f, opts.Offset, n)}, info, nil
}

// body is a Read result: a section of an open file that fails once its
// context is done.
type body struct {
	ctx context.Context
	f   *os.File
	r   *io.SectionReader
}

func (b *body) Read(p []byte) (int, error) {
	if err := b.ctx.Err(); err != nil {
		return 0, fmt.Errorf("filestore: read %s: %w", b.f.Name(), err)
	}
	return b.r.Read(p)
}

func (b *body) Close() error { return b.f.Close() }

// Delete implements objstore.Store.
func (s *Store) Delete(ctx context.Context, key string) error {
	if err := ctx.Err(); err != nil {
		return mapErr("delete", key, err)
	}
	rel, err := keyToPath(key)
	if err != nil {
		return err
	}
	fi, err := s.root.Lstat(rel)
	if err != nil || !fi.Mode().IsRegular() {
		if err == nil || errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ENOTDIR) {
			return nil // not an object
		}
		return mapErr("delete", key, err)
	}
	if err := s.root.Remove(rel); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return mapErr("delete", key, err)
	}
	s.pruneDirs(filepath.Dir(rel))
	return nil
}

// pruneDirs removes dir and its parents while they are empty.
func (s *Store) pruneDirs(dir string) {
	for dir != "." && dir != "/" && dir != "" {
		if s.root.Remove(dir) != nil {
			return // not empty (or gone): stop
		}
		dir = filepath.Dir(dir)
	}
}

// Close implements objstore.Store.
func (s *Store) Close() error { return s.root.Close() }

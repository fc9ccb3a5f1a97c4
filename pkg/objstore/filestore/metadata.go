package filestore

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"

	"golang.org/x/sys/unix"

	"github.com/basin-csi/basin/pkg/objstore"
)

// An object's user metadata is the JSON of its map in the extended
// attribute metaXattr of its file; a file without it has none. The
// attribute is set on the temporary file before the rename, so an object
// and its metadata appear together.
const metaXattr = "user.basin.meta"

// maxMetaBytes bounds the attribute, as S3 bounds user metadata (2 KiB).
const maxMetaBytes = 8 << 10

var _ objstore.MetadataSetter = (*Store)(nil)

// readMeta returns the metadata of the open file f (an empty map for none).
func readMeta(f *os.File) (map[string]string, error) {
	buf := make([]byte, maxMetaBytes)
	n, err := unix.Fgetxattr(int(f.Fd()), metaXattr, buf)
	switch {
	case errors.Is(err, unix.ENODATA) || errors.Is(err, unix.ENOTSUP):
		return map[string]string{}, nil
	case err != nil:
		return nil, fmt.Errorf("read metadata: %w", err)
	}
	var meta map[string]string
	if err := json.Unmarshal(buf[:n], &meta); err != nil {
		return nil, fmt.Errorf("read metadata: %w", err)
	}
	return objstore.NormalizeMetadata(meta), nil
}

// writeMeta makes meta the metadata of the open file f.
func writeMeta(f *os.File, meta map[string]string) error {
	if len(meta) == 0 {
		err := unix.Fremovexattr(int(f.Fd()), metaXattr)
		if errors.Is(err, unix.ENODATA) || errors.Is(err, unix.ENOTSUP) {
			return nil
		}
		return err
	}
	raw, err := json.Marshal(objstore.NormalizeMetadata(meta))
	if err != nil {
		return err
	}
	if len(raw) > maxMetaBytes {
		return fmt.Errorf("%w: metadata of %d bytes, more than %d", objstore.ErrInvalidKey, len(raw), maxMetaBytes)
	}
	return unix.Fsetxattr(int(f.Fd()), metaXattr, raw, 0)
}

// SetMetadata rewrites the object's extended attribute in place: size,
// modification time and inode stay, and so does the version.
func (s *Store) SetMetadata(ctx context.Context, key string, meta map[string]string, ifVersion string) (objstore.ObjectInfo, error) {
	if err := ctx.Err(); err != nil {
		return objstore.ObjectInfo{}, mapErr("set metadata", key, err)
	}
	f, info, err := s.open("set metadata", key)
	if err != nil {
		return objstore.ObjectInfo{}, err
	}
	defer func() { _ = f.Close() }()
	if ifVersion != "" && info.Version != ifVersion {
		return objstore.ObjectInfo{}, fmt.Errorf("filestore: set metadata %q: version is %s, not %s: %w", key, info.Version, ifVersion, objstore.ErrPreconditionFailed)
	}
	if err := writeMeta(f, meta); err != nil {
		return objstore.ObjectInfo{}, mapErr("set metadata", key, err)
	}
	info.Metadata = objstore.NormalizeMetadata(meta)
	return info, nil
}

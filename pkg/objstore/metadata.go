package objstore

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"strings"
)

// User metadata is a small map of strings stored with an object: S3's
// x-amz-meta-* headers, GCS's object metadata, an extended attribute of
// the file in filestore. Keys are lower-case ASCII without the prefix
// ("mode" for x-amz-meta-mode); ObjectInfo.Metadata and PutOptions.Metadata
// carry it. Stat returns it; listings return it only where the backend's
// listing holds it (GCS), and say nil otherwise, so callers can tell
// "none" from "not asked".

// MetadataSetter replaces an object's user metadata without sending its
// content again: S3 copies the object onto itself with the new metadata
// (CopyObject with MetadataDirective REPLACE, or UploadPartCopy parts
// above the single-copy bound), GCS updates the object's metadata, and
// filestore rewrites the extended attribute. Every adapter of this module
// implements it.
type MetadataSetter interface {
	// SetMetadata makes meta the whole user metadata of key, provided the
	// object still has version ifVersion (when set; ErrPreconditionFailed
	// otherwise), and returns the object's attributes afterwards. The
	// content is unchanged; the version may change (S3 multipart copies,
	// filestore), or not (S3 single copies keep the ETag, GCS the
	// generation).
	SetMetadata(ctx context.Context, key string, meta map[string]string, ifVersion string) (ObjectInfo, error)
}

// NormalizeMetadata returns meta with lower-case keys (S3 and GCS
// answer keys in their own case), an empty map for none. Empty values
// count as absent.
func NormalizeMetadata(meta map[string]string) map[string]string {
	if len(meta) == 0 {
		return map[string]string{}
	}
	out := make(map[string]string, len(meta))
	for k, v := range meta {
		if v != "" { // GCS keeps a deleted key as "" on some servers
			out[strings.ToLower(k)] = v
		}
	}
	return out
}

// CloneMetadata returns a copy of meta (nil stays nil).
func CloneMetadata(meta map[string]string) map[string]string {
	if meta == nil {
		return nil
	}
	return maps.Clone(meta)
}

// ErrMetadataUnsupported: the store under a wrapper cannot replace
// metadata (it does not implement MetadataSetter).
var ErrMetadataUnsupported = errors.New("objstore: metadata replacement not supported")

// SetMetadataOf calls s's SetMetadata, or fails with
// ErrMetadataUnsupported; wrappers forward through it.
func SetMetadataOf(ctx context.Context, s Store, key string, meta map[string]string, ifVersion string) (ObjectInfo, error) {
	setter, ok := s.(MetadataSetter)
	if !ok {
		return ObjectInfo{}, fmt.Errorf("%w by %T", ErrMetadataUnsupported, s)
	}
	return setter.SetMetadata(ctx, key, meta, ifVersion)
}

var _ MetadataSetter = (*prefixStore)(nil)

// SetMetadata forwards with the prefix added.
func (p *prefixStore) SetMetadata(ctx context.Context, key string, meta map[string]string, ifVersion string) (ObjectInfo, error) {
	full, err := p.full(key)
	if err != nil {
		return ObjectInfo{}, err
	}
	info, err := SetMetadataOf(ctx, p.s, full, meta, ifVersion)
	return p.rel(info), err
}

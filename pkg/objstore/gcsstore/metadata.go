package gcsstore

import (
	"context"
	"fmt"

	"cloud.google.com/go/storage"

	"github.com/basin-csi/basin/pkg/objstore"
)

var _ objstore.MetadataSetter = (*Store)(nil)

// SetMetadata updates the object's metadata (a metadata-only request; the
// generation stays). GCS merges the keys it is sent, so keys of the old
// metadata missing from meta are sent empty, which deletes them.
func (s *Store) SetMetadata(ctx context.Context, key string, meta map[string]string, ifVersion string) (objstore.ObjectInfo, error) {
	if err := checkKey(key); err != nil {
		return objstore.ObjectInfo{}, err
	}
	ctx, cancel := s.requestCtx(ctx)
	defer cancel()
	obj := s.bucket.Object(key)
	cur, err := obj.Attrs(ctx)
	if err != nil {
		return objstore.ObjectInfo{}, mapErr(opStat, key, err)
	}
	gen := cur.Generation
	if ifVersion != "" {
		if gen, err = parseGeneration(ifVersion); err != nil {
			return objstore.ObjectInfo{}, err
		}
		if gen != cur.Generation {
			return objstore.ObjectInfo{}, fmt.Errorf("gcsstore: set metadata %q: generation is %d, not %d: %w", key, cur.Generation, gen, objstore.ErrPreconditionFailed)
		}
	}
	update := make(map[string]string, len(meta)+len(cur.Metadata))
	for k := range cur.Metadata {
		update[k] = ""
	}
	for k, v := range meta {
		update[k] = v
	}
	attrs, err := obj.If(storage.Conditions{GenerationMatch: gen, MetagenerationMatch: cur.Metageneration}).
		Update(ctx, storage.ObjectAttrsToUpdate{Metadata: update})
	if err != nil {
		return objstore.ObjectInfo{}, mapErr(opStat, key, err)
	}
	return infoFromAttrs(attrs), nil
}

package objstoretest

import (
	"context"
	"fmt"

	"github.com/basin-csi/basin/pkg/objstore"
)

var _ objstore.MetadataSetter = (*Fake)(nil)

// OpSetMetadata counts SetMetadata calls.
const OpSetMetadata Op = "SetMetadata"

// SetMetadata implements objstore.MetadataSetter as S3's copy onto itself
// does for small objects: same content, same version, new metadata.
func (f *Fake) SetMetadata(ctx context.Context, key string, meta map[string]string, ifVersion string) (objstore.ObjectInfo, error) {
	if err := f.begin(ctx, OpSetMetadata, key); err != nil {
		return objstore.ObjectInfo{}, err
	}
	if err := checkKey(key); err != nil {
		return objstore.ObjectInfo{}, err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	o, ok := f.objects[key]
	if !ok {
		return objstore.ObjectInfo{}, fmt.Errorf("objstoretest: %q: %w", key, objstore.ErrNotFound)
	}
	if ifVersion != "" && o.version != ifVersion {
		return objstore.ObjectInfo{}, fmt.Errorf("objstoretest: %q is version %s, not %s: %w", key, o.version, ifVersion, objstore.ErrPreconditionFailed)
	}
	o.meta = objstore.NormalizeMetadata(meta)
	f.objects[key] = o
	return o.info(key), nil
}

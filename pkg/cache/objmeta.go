package cache

import (
	"context"
	"fmt"
	"sort"

	bolt "go.etcd.io/bbolt"

	"github.com/basin-csi/basin/pkg/objstore"
)

// An object's user metadata (modes, times, symbolic links: pkg/fuse) is
// kept per version: a HEAD (Stat), an upload of this mount (Wrote) or a
// listing that carries metadata (GCS) records it, and ObjectMetadata
// answers it for as long as the object keeps that version, across
// remounts: the metadata of a version never changes, except by
// SetMetadata, whose result the caller records with Wrote. So a listing
// without metadata (S3) costs at most one HEAD per object version ever,
// and only for the objects the caller asks about.

// objMetaPrefix names the overlay entries of object metadata in
// Cache.attrs, apart from the keys' attributes (no object key starts with
// a NUL byte that the file system shows).
const objMetaPrefix = "\x00m"

// objMetaRecord is the user metadata of one object version (bucket
// "objmeta").
type objMetaRecord struct {
	Version string
	Meta    map[string]string
}

func objMetaName(key string) string { return objMetaPrefix + key }

// recordObjMeta records info's metadata if the answer carried it.
func (c *Cache) recordObjMeta(info objstore.ObjectInfo) {
	if info.Metadata == nil || info.Key == "" || info.Version == "" {
		return
	}
	c.setAttr(objMetaName(info.Key), pendingAttr{kind: attrObjMeta,
		meta: &objMetaRecord{Version: info.Version, Meta: objstore.CloneMetadata(info.Metadata)}})
}

// ObjectMetadata returns the user metadata of the object version info
// names: info's own when it carries it, else the recorded one of that
// version. When neither knows and probe is set, a HEAD asks the bucket
// (and its answer is recorded); without probe it returns nil, false.
// The map is the caller's.
func (c *Cache) ObjectMetadata(ctx context.Context, info objstore.ObjectInfo, probe bool) (map[string]string, bool, error) {
	if info.Metadata != nil {
		c.recordObjMeta(info)
		return objstore.CloneMetadata(info.Metadata), true, nil
	}
	if c.isClosed.Load() {
		return nil, false, ErrClosed
	}
	rec, ok, err := c.lookupObjMeta(info.Key)
	if err != nil {
		return nil, false, err
	}
	if ok && rec.Version == info.Version {
		return objstore.CloneMetadata(rec.Meta), true, nil
	}
	if !probe {
		return nil, false, nil
	}
	fresh, err := c.statSF.do(ctx, "\x00head "+info.Key, func() (objstore.ObjectInfo, error) {
		c.stats.bucketRequests.Add(1)
		return c.store.Stat(ctx, info.Key)
	})
	if err != nil {
		return nil, false, err
	}
	c.recordObjMeta(fresh)
	if fresh.Version != info.Version {
		return nil, false, fmt.Errorf("cache: metadata of %q: version is %s, not %s: %w", info.Key, fresh.Version, info.Version, objstore.ErrPreconditionFailed)
	}
	return objstore.CloneMetadata(fresh.Metadata), true, nil
}

// lookupObjMeta returns the recorded metadata of key, if any.
func (c *Cache) lookupObjMeta(key string) (objMetaRecord, bool, error) {
	c.metaMu.Lock()
	p, ok := c.attrs[objMetaName(key)]
	c.metaMu.Unlock()
	if ok && p.meta != nil {
		return *p.meta, true, nil
	}
	var rec objMetaRecord
	err := c.ix.view(func(tx *bolt.Tx) error {
		raw := tx.Bucket(bucketObjMeta).Get([]byte(key))
		if raw == nil {
			return nil
		}
		r, err := decodeObjMeta(raw)
		if err != nil {
			return nil // treated as absent
		}
		rec, ok = r, true
		return nil
	})
	return rec, ok, err
}

// encodeObjMeta encodes r, its keys sorted.
func encodeObjMeta(r objMetaRecord) []byte {
	keys := make([]string, 0, len(r.Meta))
	for k := range r.Meta {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	b := []byte{recordFormatV1}
	b = putString(b, r.Version)
	b = putUvarint(b, uint64(len(keys)))
	for _, k := range keys {
		b = putString(putString(b, k), r.Meta[k])
	}
	return b
}

func decodeObjMeta(b []byte) (objMetaRecord, error) {
	d := decoder{b: b}
	d.format()
	r := objMetaRecord{Version: d.str("version")}
	n := d.uvarint("metadata entries")
	if n > uint64(len(b)) {
		return objMetaRecord{}, fmt.Errorf("%w: %d metadata entries in %d bytes", ErrCorruptRecord, n, len(b))
	}
	r.Meta = make(map[string]string, n)
	for range n {
		k := d.str("metadata key")
		r.Meta[k] = d.str("metadata value")
	}
	if err := d.end(); err != nil {
		return objMetaRecord{}, err
	}
	return r, nil
}

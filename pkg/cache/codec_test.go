package cache

import (
	"bytes"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/basin-csi/basin/pkg/objstore"
)

func sampleObject() *objRecord {
	r := &objRecord{Version: "etag-1", Size: 10*4096 + 7, ModTime: time.Unix(1700000000, 5).UTC(), BlockSize: 4096, Alloc: 8192}
	n := numBlocks(r.Size, r.BlockSize)
	r.Present = make([]uint64, (n+63)/64)
	r.CRCs = make([]uint32, n)
	for _, b := range []int{0, 3, 10} {
		r.Present[b/64] |= 1 << (b % 64)
		r.CRCs[b] = uint32(0xdeadbeef + b)
	}
	return r
}

func TestCodecRoundTrip(t *testing.T) {
	t.Run("object", func(t *testing.T) {
		r := sampleObject()
		got, err := decodeObject(encodeObject(r))
		if err != nil || !reflect.DeepEqual(&got, r) {
			t.Fatalf("decode(encode) = %+v, %v; want %+v", got, err, r)
		}
		h, _, err := decodeObjectHeader(encodeObject(r))
		if err != nil || h.Alloc != r.Alloc || h.Version != r.Version {
			t.Fatalf("header = %+v, %v", h, err)
		}
	})
	t.Run("attr", func(t *testing.T) {
		r := attrRecord{Size: 5, Version: "v", ModTime: time.Unix(1, 2).UTC(), FetchedAt: time.Unix(3, 4).UTC()}
		got, err := decodeAttr(encodeAttr(r))
		if err != nil || got != r {
			t.Fatalf("got %+v, %v", got, err)
		}
		zero := attrRecord{}
		if got, err := decodeAttr(encodeAttr(zero)); err != nil || !got.ModTime.IsZero() {
			t.Fatalf("zero times: %+v, %v", got, err)
		}
	})
	t.Run("listing", func(t *testing.T) {
		l := &Listing{
			Objects:   []objstore.ObjectInfo{{Key: "d/a", Size: 1, Version: "x", ModTime: time.Unix(9, 0).UTC()}, {Key: "d/b"}},
			Prefixes:  []string{"d/p/"},
			FetchedAt: time.Unix(7, 0).UTC(),
		}
		got, err := decodeListing("d/", encodeListing("d/", l))
		if err != nil || !reflect.DeepEqual(&got, l) {
			t.Fatalf("got %+v, %v", got, err)
		}
	})
	t.Run("corrupt", func(t *testing.T) {
		enc := encodeObject(sampleObject())
		for _, b := range [][]byte{nil, {2}, enc[:len(enc)-1], append(append([]byte{}, enc...), 0)} {
			if _, err := decodeObject(b); err == nil {
				t.Errorf("decodeObject(%x) accepted corrupt input", b)
			}
		}
	})
}

// FuzzDecode feeds arbitrary bytes to every decoder: none may panic or
// allocate without bound, and whatever decodes must re-encode to a value
// that decodes the same.
func FuzzDecode(f *testing.F) {
	f.Add(encodeObject(sampleObject()), "d/")
	f.Add(encodeAttr(attrRecord{Size: 3, Version: "v"}), "")
	f.Add(encodeNegative(time.Unix(5, 0)), "")
	f.Add(encodeListing("x/", &Listing{Objects: []objstore.ObjectInfo{{Key: "x/y", Size: 2}}, Prefixes: []string{"x/z/"}}), "x/")
	f.Add([]byte{1, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x7f}, "")
	f.Fuzz(func(t *testing.T, b []byte, dir string) {
		if r, err := decodeObject(b); err == nil {
			if len(r.CRCs) > 32*len(b)+64 {
				t.Fatalf("%d CRCs from %d bytes", len(r.CRCs), len(b))
			}
			r2, err := decodeObject(encodeObject(&r))
			if err != nil || !reflect.DeepEqual(r, r2) {
				t.Fatalf("object round trip: %v", err)
			}
		}
		if r, err := decodeAttr(b); err == nil {
			r2, err := decodeAttr(encodeAttr(r))
			if err != nil || !reflect.DeepEqual(r, r2) {
				t.Fatalf("attr round trip: %v", err)
			}
		}
		if ts, err := decodeNegative(b); err == nil {
			ts2, err := decodeNegative(encodeNegative(ts))
			if err != nil || !ts.Equal(ts2) {
				t.Fatalf("negative round trip: %v", err)
			}
		}
		if l, err := decodeListing(dir, b); err == nil {
			if len(l.Objects)*4 > len(b) || len(l.Prefixes) > len(b) {
				t.Fatalf("listing of %d+%d entries from %d bytes", len(l.Objects), len(l.Prefixes), len(b))
			}
			l2, err := decodeListing(dir, encodeListing(dir, &l))
			if err != nil || !reflect.DeepEqual(l, l2) {
				t.Fatalf("listing round trip: %v", err)
			}
		}
	})
}

// FuzzDataPath checks the key → data file mapping: the path is always
// data/xxx/<64 hex> inside the cache directory whatever the key holds,
// never contains the key, and differs when any input differs (including
// inputs that concatenate to the same bytes).
func FuzzDataPath(f *testing.F) {
	f.Add("s3://b/", "../../etc/passwd", "v1", int64(3), 2)
	f.Add("", "", "", int64(0), 0)
	f.Add("o", "a/b\x00c", "\"etag\"", int64(1<<40), 1)
	f.Add("o", strings.Repeat("k/", 2048), "g", int64(5), 100)
	f.Fuzz(func(t *testing.T, origin, key, version string, size int64, split int) {
		const dir = "/cache/vol"
		id := objectID(origin, key, version, size)
		rel := dataRel(id)
		p := filepath.Join(dir, rel)
		if filepath.Clean(p) != p || !strings.HasPrefix(p, dir+"/data/") {
			t.Fatalf("path %q escapes %s/data", p, dir)
		}
		parts := strings.Split(rel, "/")
		if len(parts) != 3 || len(parts[1]) != fanout || len(parts[2]) != 64 || parts[2][:fanout] != parts[1] {
			t.Fatalf("bad layout %q", rel)
		}
		if got, ok := parseDataName(parts[2]); !ok || got != id {
			t.Fatalf("parseDataName(%q) = %x, %v", parts[2], got, ok)
		}
		if len(key) >= 4 && strings.Contains(rel, key) && !isHexString(key) {
			t.Fatalf("key %q leaks into the path %q", key, rel)
		}
		// Moving bytes between origin and key, or key and version, must
		// change the name.
		joined := origin + key
		if split < 0 {
			split = -split
		}
		if len(joined) > 0 {
			s := split % (len(joined) + 1)
			if o2, k2 := joined[:s], joined[s:]; o2 != origin {
				if objectID(o2, k2, version, size) == id {
					t.Fatalf("(%q,%q) and (%q,%q) share a data file", origin, key, o2, k2)
				}
			}
		}
		if objectID(origin, key, version, size+1) == id || objectID(origin, key, version+"x", size) == id {
			t.Fatal("a different version or size shares the data file")
		}
		if !bytes.Equal(id[:], objectIDBytes(origin, key, version, size)) {
			t.Fatal("objectID is not deterministic")
		}
	})
}

func objectIDBytes(origin, key, version string, size int64) []byte {
	id := objectID(origin, key, version, size)
	return id[:]
}

func isHexString(s string) bool {
	for _, r := range s {
		if !strings.ContainsRune("0123456789abcdef/", r) {
			return false
		}
	}
	return true
}

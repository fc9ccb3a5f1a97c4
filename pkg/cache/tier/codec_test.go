package tier

import (
	"bytes"
	"errors"
	"hash/crc32"
	"testing"
)

func testID() Identity {
	return Identity{Origin: "s3://b/p/ @http://127.0.0.1:9000", Key: "a/b", Version: "etag1", Size: 10<<10 + 5,
		BlockSize: 4 << 10, First: 0, Blocks: 3}
}

// encode returns a whole tier object of id holding data.
func encode(t *testing.T, id Identity, data []byte) []byte {
	t.Helper()
	var crcs []uint32
	for i := range id.Blocks {
		off := int64(i) * id.BlockSize
		crcs = append(crcs, crc32.Checksum(data[off:off+id.blockLen(i)], castagnoli))
	}
	h, err := encodeHeader(id, crcs)
	if err != nil {
		t.Fatal(err)
	}
	return append(h, data...)
}

func bufsFor(id Identity) [][]byte {
	var out [][]byte
	for i := range id.Blocks {
		out = append(out, make([]byte, id.blockLen(i)))
	}
	return out
}

func TestDecode(t *testing.T) {
	id := testID()
	data := bytes.Repeat([]byte("0123456789abcdef"), int(id.Size/16)+1)[:id.Size]
	good := encode(t, id, data)
	bufs := bufsFor(id)
	crcs, err := decode(bytes.NewReader(good), id, bufs)
	if err != nil || len(crcs) != 3 || !bytes.Equal(bytes.Join(bufs, nil), data) {
		t.Fatalf("decode of a good object: %v, %d crcs", err, len(crcs))
	}
	other := func(f func(*Identity)) []byte { o := id; f(&o); return encode(t, o, data) }
	flip := append([]byte(nil), good...)
	flip[len(flip)-1] ^= 1
	for name, body := range map[string][]byte{
		"other version": other(func(o *Identity) { o.Version = "etag2" }),
		"other key":     other(func(o *Identity) { o.Key = "a/c" }),
		"other origin":  other(func(o *Identity) { o.Origin = "s3://c/p/" }),
		"flipped bit":   flip,
		"short":         good[:len(good)-1],
		"long":          append(append([]byte(nil), good...), 0),
		"no magic":      append([]byte("BASINTR2"), good[8:]...),
		"empty":         nil,
	} {
		if _, err := decode(bytes.NewReader(body), id, bufsFor(id)); !errors.Is(err, errCorrupt) {
			t.Errorf("%s: %v; want errCorrupt", name, err)
		}
	}
}

func TestObjectKey(t *testing.T) {
	id := testID()
	seen := map[string]string{id.ObjectKey(): "base"}
	for name, f := range map[string]func(*Identity){
		"version":    func(o *Identity) { o.Version = "etag2" },
		"first":      func(o *Identity) { o.First = 1 },
		"block size": func(o *Identity) { o.BlockSize = 8 << 10 },
		"size":       func(o *Identity) { o.Size++ },
		"key shift":  func(o *Identity) { o.Origin += "a"; o.Key = "/b" }, // same concatenation
	} {
		o := id
		f(&o)
		k := o.ObjectKey()
		if prev, ok := seen[k]; ok {
			t.Errorf("%s: same key as %s", name, prev)
		}
		seen[k] = name
	}
	if k := id.ObjectKey(); len(k) != len("basin/xx/")+64 || k[:6] != "basin/" || k[6:8] != k[9:11] {
		t.Errorf("key %q", k)
	}
}

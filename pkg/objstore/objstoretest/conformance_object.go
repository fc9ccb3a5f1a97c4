package objstoretest

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/basin-csi/basin/pkg/objstore"
)

func testRoundTrip(t *testing.T, h Harness) {
	s := h.NewStore(t)
	data := patternBytes(1, 100<<10)
	put := mustPut(t, s, "dir/object.bin", data)

	st := mustStat(t, s, "dir/object.bin")
	if st.Size != int64(len(data)) || st.Version != put.Version {
		t.Errorf("Stat = %+v, want size %d and Put's version %q", st, len(data), put.Version)
	}
	if st.ModTime.IsZero() || time.Since(st.ModTime).Abs() > time.Hour {
		t.Errorf("Stat ModTime = %v, want about now", st.ModTime)
	}
	got, info := mustRead(t, s, "dir/object.bin", objstore.ReadOptions{Length: -1})
	if !bytes.Equal(got, data) {
		t.Errorf("Read returned %d bytes, not the %d put", len(got), len(data))
	}
	if info.Key != "dir/object.bin" || info.Size != st.Size || info.Version != st.Version {
		t.Errorf("Read info = %+v, want %+v", info, st)
	}
	got, _ = mustRead(t, s, "dir/object.bin", objstore.ReadOptions{Length: -1, IfVersion: st.Version})
	if !bytes.Equal(got, data) {
		t.Error("Read with the current IfVersion returned other bytes")
	}

	// Put with an unknown size stores the same bytes.
	info, err := s.Put(t.Context(), "dir/unsized", bytes.NewReader(data), objstore.PutOptions{Size: -1, ContentType: "application/octet-stream"})
	if err != nil {
		t.Fatalf("Put(Size -1): %v", err)
	}
	if info.Size != int64(len(data)) {
		t.Errorf("Put(Size -1).Size = %d, want %d", info.Size, len(data))
	}
	got, _ = mustRead(t, s, "dir/unsized", objstore.ReadOptions{Length: -1})
	if !bytes.Equal(got, data) {
		t.Error("Read after Put(Size -1) returned other bytes")
	}

	if err := s.Delete(t.Context(), "dir/object.bin"); err != nil {
		t.Fatalf("Delete: %v", err)
	}
	_, err = s.Stat(t.Context(), "dir/object.bin")
	wantErr(t, "Stat after Delete", err, objstore.ErrNotFound)
}

func testRangedRead(t *testing.T, h Harness) {
	s := h.NewStore(t)
	const size = 1000
	data := patternBytes(2, size)
	put := mustPut(t, s, "ranged", data)
	cases := []struct {
		name           string
		offset, length int64
		want           []byte
	}{
		{"whole", 0, -1, data},
		{"head", 0, 10, data[:10]},
		{"middle", 100, 200, data[100:300]},
		{"last byte", size - 1, 1, data[size-1:]},
		{"last byte to end", size - 1, -1, data[size-1:]},
		{"tail to end", 900, -1, data[900:]},
		{"length past end", 990, 100, data[990:]},
		{"offset 0 length past end", 0, size + 1, data},
		{"length 0", 5, 0, nil},
		{"offset 0 length 0", 0, 0, nil},
		{"offset size", size, -1, nil},
		{"offset size length 10", size, 10, nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, info := mustRead(t, s, "ranged", objstore.ReadOptions{Offset: c.offset, Length: c.length})
			if !bytes.Equal(got, c.want) {
				t.Errorf("Read(%d, %d) returned %d bytes, want %d (bytes differ: %v)", c.offset, c.length, len(got), len(c.want), len(got) == len(c.want))
			}
			if info.Size != size || info.Version != put.Version || info.Key != "ranged" {
				t.Errorf("Read(%d, %d) info = %+v, want the whole object's (size %d, version %q)", c.offset, c.length, info, size, put.Version)
			}
		})
	}
	for _, c := range []struct {
		name           string
		offset, length int64
	}{
		{"offset past end", size + 1, -1},
		{"offset far past end", 1 << 40, 10},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, _, err := readRange(t.Context(), s, "ranged", objstore.ReadOptions{Offset: c.offset, Length: c.length})
			wantErr(t, "Read past the end", err, objstore.ErrInvalidRange)
		})
	}
}

func testEmptyObject(t *testing.T, h Harness) {
	s := h.NewStore(t)
	put := mustPut(t, s, "empty", nil)
	if st := mustStat(t, s, "empty"); st.Size != 0 || st.Version != put.Version {
		t.Errorf("Stat = %+v, want size 0 and version %q", st, put.Version)
	}
	for _, o := range []objstore.ReadOptions{
		{Length: -1},
		{Length: 10},
		{Length: 0},
		{Length: -1, IfVersion: put.Version},
	} {
		got, info := mustRead(t, s, "empty", o)
		if len(got) != 0 || info.Size != 0 || info.Version != put.Version {
			t.Errorf("Read(%+v) = %d bytes, info %+v; want nothing from version %q", o, len(got), info, put.Version)
		}
	}
	_, _, err := readRange(t.Context(), s, "empty", objstore.ReadOptions{Offset: 1, Length: -1})
	wantErr(t, "Read(offset 1) of an empty object", err, objstore.ErrInvalidRange)

	// Put(Size -1) of an empty body too.
	info, err := s.Put(t.Context(), "empty-unsized", strings.NewReader(""), objstore.PutOptions{Size: -1})
	if err != nil || info.Size != 0 {
		t.Fatalf("Put(empty, Size -1) = %+v, %v", info, err)
	}
	objects, _ := listAll(t, s, objstore.ListOptions{})
	if got := keysOf(objects); !equalStrings(got, []string{"empty", "empty-unsized"}) {
		t.Errorf("List = %q", got)
	}
}

// longKey is about 1000 bytes in segments of 99, within every backend's
// limits (S3 and GCS 1024 bytes per key, file systems 255 per name).
func longKey() string {
	var b strings.Builder
	b.WriteString("long")
	for i := 0; b.Len() < 990; i++ {
		b.WriteString("/")
		b.WriteString(strings.Repeat(string(rune('a'+i%26)), 98))
	}
	return b.String()
}

func testKeys(t *testing.T, h Harness) {
	s := h.NewStore(t)
	cases := []struct {
		key string
		// mayReject: a backend may refuse the key with ErrInvalidKey.
		mayReject bool
	}{
		{key: "unicode/日本語/ファイル.txt"},
		{key: "unicode/émoji-😀 Ünïcödé.bin"},
		{key: "space/with space/file name .txt"},
		{key: "plus/a+b c+d"},
		{key: "percent/100%25 % %2F"},
		{key: "special/a=b&c;d,e@f(g)[h]~$!'*"},
		{key: "query/what?x=1#frag"},
		{key: "dots/a..b"},
		{key: "dots/.../x"},
		{key: "dots/.hidden"},
		{key: "a/../b", mayReject: true},
		{key: "./x", mayReject: true},
		{key: longKey()},
	}
	var accepted []string
	for _, c := range cases {
		data := []byte("content of " + c.key)
		info, err := s.Put(t.Context(), c.key, bytes.NewReader(data), objstore.PutOptions{Size: int64(len(data))})
		if c.mayReject && err != nil {
			wantErr(t, "Put("+c.key+")", err, objstore.ErrInvalidKey)
			t.Logf("backend refuses key %q: %v", c.key, err)
			continue
		}
		if err != nil {
			t.Errorf("Put(%q): %v", c.key, err)
			continue
		}
		if info.Key != c.key {
			t.Errorf("Put(%q).Key = %q", c.key, info.Key)
		}
		accepted = append(accepted, c.key)
		if st, err := s.Stat(t.Context(), c.key); err != nil || st.Key != c.key || st.Size != int64(len(data)) {
			t.Errorf("Stat(%q) = %+v, %v", c.key, st, err)
		}
		got, _, err := readRange(t.Context(), s, c.key, objstore.ReadOptions{Length: -1})
		if err != nil || !bytes.Equal(got, data) {
			t.Errorf("Read(%q) = %q, %v; want %q", c.key, got, err, data)
		}
		objects, _ := listAll(t, s, objstore.ListOptions{Prefix: c.key})
		if got := keysOf(objects); !equalStrings(got, []string{c.key}) {
			t.Errorf("List(prefix %q) = %q", c.key, got)
		}
	}
	objects, _ := listAll(t, s, objstore.ListOptions{})
	want := append([]string(nil), accepted...)
	sortStrings(want)
	if got := keysOf(objects); !equalStrings(got, want) {
		t.Errorf("List = %q\nwant %q", got, want)
	}
	for _, k := range accepted {
		if err := s.Delete(t.Context(), k); err != nil {
			t.Errorf("Delete(%q): %v", k, err)
		}
		_, err := s.Stat(t.Context(), k)
		wantErr(t, "Stat("+k+") after Delete", err, objstore.ErrNotFound)
	}
	if objects, prefixes := listAll(t, s, objstore.ListOptions{Delimiter: "/"}); len(objects)+len(prefixes) != 0 {
		t.Errorf("List after deleting everything = %q, %q", keysOf(objects), prefixes)
	}
}

func testOverwrite(t *testing.T, h Harness) {
	s := h.NewStore(t)
	v1 := mustPut(t, s, "obj", []byte("version one"))
	v2 := mustPut(t, s, "obj", []byte("version two")) // same size, other bytes
	if v1.Version == v2.Version {
		t.Fatalf("overwrite kept version %q", v1.Version)
	}
	if st := mustStat(t, s, "obj"); st.Version != v2.Version {
		t.Errorf("Stat version %q, want %q", st.Version, v2.Version)
	}
	got, info := mustRead(t, s, "obj", objstore.ReadOptions{Length: -1, IfVersion: v2.Version})
	if string(got) != "version two" || info.Version != v2.Version {
		t.Errorf("Read(IfVersion current) = %q, %+v", got, info)
	}
	for _, o := range []objstore.ReadOptions{
		{Length: -1, IfVersion: v1.Version},
		{Offset: 3, Length: 2, IfVersion: v1.Version},
		{Offset: 0, Length: 0, IfVersion: v1.Version},
		{Offset: v2.Size, Length: -1, IfVersion: v1.Version},
	} {
		_, _, err := readRange(t.Context(), s, "obj", o)
		wantErr(t, "Read with an old IfVersion", err, objstore.ErrPreconditionFailed)
	}
	v3 := mustPut(t, s, "obj", []byte("v3"))
	if v3.Version == v2.Version || v3.Version == v1.Version {
		t.Errorf("third version %q repeats an earlier one", v3.Version)
	}
	objects, _ := listAll(t, s, objstore.ListOptions{})
	if len(objects) != 1 || objects[0].Version != v3.Version || objects[0].Size != 2 {
		t.Errorf("List = %+v, want one object of version %q, size 2", objects, v3.Version)
	}
}

func testMissing(t *testing.T, h Harness) {
	s := h.NewStore(t)
	mustPut(t, s, "present/file", []byte("x"))
	for _, key := range []string{"missing", "present/missing", "present", "present/file/below"} {
		_, err := s.Stat(t.Context(), key)
		wantErr(t, "Stat("+key+")", err, objstore.ErrNotFound)
		_, _, err = readRange(t.Context(), s, key, objstore.ReadOptions{Length: -1})
		wantErr(t, "Read("+key+")", err, objstore.ErrNotFound)
		if err := s.Delete(t.Context(), key); err != nil {
			t.Errorf("Delete(%q) of a missing key: %v", key, err)
		}
	}
	_, err := s.Copy(t.Context(), "missing", "copy")
	wantErr(t, "Copy from a missing key", err, objstore.ErrNotFound)
	if st := mustStat(t, s, "present/file"); st.Size != 1 {
		t.Errorf("deleting missing keys touched present/file: %+v", st)
	}
}

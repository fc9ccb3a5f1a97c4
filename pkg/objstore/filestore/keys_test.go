package filestore

import (
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"github.com/basin-csi/basin/pkg/objstore"
)

func TestKeyToPath(t *testing.T) {
	cases := []struct {
		key, want string // want "" means ErrInvalidKey
	}{
		{"a", "a"},
		{"a/b/c", "a/b/c"},
		{"a..b", "a..b"},
		{"a/.../b", "a/.../b"},
		{".hidden/x", ".hidden/x"},
		{"dir/", "dir/" + markerName},
		{"a/b/", "a/b/" + markerName},
		{"日本/ファイル", "日本/ファイル"},
		{"back\\slash", "back\\slash"},
		{strings.Repeat("x", 255), strings.Repeat("x", 255)},
		{"", ""},
		{"/", ""},
		{"/a", ""},
		{"a//b", ""},
		{"a/../b", ""},
		{"..", ""},
		{"../x", ""},
		{"./x", ""},
		{"a/.", ""},
		{"a/./", ""},
		{"a//", ""},
		{".basin-tmp-1", ""},
		{"a/.basin-dir", ""},
		{".basin-anything/x", ""},
		{"nul\x00byte", ""},
		{"bad\xffutf8", ""},
		{strings.Repeat("x", 256), ""},
	}
	for _, c := range cases {
		t.Run(c.key, func(t *testing.T) {
			got, err := keyToPath(c.key)
			if c.want == "" {
				if !errors.Is(err, objstore.ErrInvalidKey) {
					t.Errorf("keyToPath(%q) = %q, %v; want ErrInvalidKey", c.key, got, err)
				}
				return
			}
			if err != nil || got != c.want {
				t.Errorf("keyToPath(%q) = %q, %v; want %q", c.key, got, err, c.want)
			}
			if back := pathToKey(got); back != c.key {
				t.Errorf("pathToKey(%q) = %q, want %q", got, back, c.key)
			}
		})
	}
}

func FuzzKeyToPath(f *testing.F) {
	for _, seed := range []string{"a", "a/b/", "a/../b", "../x", "./x", "/a", "a//b", "..", ".basin-dir", "a..b", "x/\x00", "\xff"} {
		f.Add(seed)
	}
	const root = "/bucket/root"
	f.Fuzz(func(t *testing.T, key string) {
		p, err := keyToPath(key)
		if err != nil {
			if !errors.Is(err, objstore.ErrInvalidKey) {
				t.Fatalf("keyToPath(%q): %v, not ErrInvalidKey", key, err)
			}
			return
		}
		if !filepath.IsLocal(p) || filepath.Clean(p) != p {
			t.Fatalf("keyToPath(%q) = %q: not a clean local path", key, p)
		}
		full := filepath.Join(root, p)
		if !strings.HasPrefix(full, root+"/") {
			t.Fatalf("keyToPath(%q) = %q escapes the root: %q", key, p, full)
		}
		if back := pathToKey(p); back != key {
			t.Fatalf("pathToKey(keyToPath(%q)) = %q: two keys could share a path", key, back)
		}
		for seg := range strings.SplitSeq(p, "/") {
			if seg != markerName && !validName(seg) {
				t.Fatalf("keyToPath(%q) = %q has segment %q, which listings would hide", key, p, seg)
			}
		}
	})
}

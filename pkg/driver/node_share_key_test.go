package driver

import (
	"testing"
	"time"

	"github.com/basin-csi/basin/internal/mountdefaults"
	"github.com/basin-csi/basin/pkg/mountspec"
)

// TestShareKey: volumes share only when their specs differ in nothing but
// the prefix, and only read-only ones.
func TestShareKey(t *testing.T) {
	base := mountspec.Default()
	base.Bucket, base.Prefix, base.ReadOnly = "data", "train/", true
	same := base
	same.Prefix = "train/imagenet/"
	if shareKey(base) != shareKey(same) {
		t.Error("specs differing in the prefix alone have different keys")
	}
	same.UploadMode = mountdefaults.UploadAsync // nothing to upload on a read-only volume
	if shareKey(base) != shareKey(same) {
		t.Error("specs differing in the prefix and the upload mode have different keys")
	}
	for name, edit := range map[string]func(*mountspec.Spec){
		"bucket":      func(s *mountspec.Spec) { s.Bucket = "other" },
		"endpoint":    func(s *mountspec.Spec) { s.Endpoint = "http://127.0.0.1:9000" },
		"metadataTTL": func(s *mountspec.Spec) { s.MetadataTTL = time.Hour },
		"uid":         func(s *mountspec.Spec) { s.UID = 1000 },
		"fsGroup":     func(s *mountspec.Spec) { *s = s.WithMountGroup(4242) },
		"mount flags": func(s *mountspec.Spec) { s.MountOptions = []string{"noexec"} },
		"cacheSize":   func(s *mountspec.Spec) { s.CacheSize = 1 << 30 },
		"sharedCache": func(s *mountspec.Spec) { s.SharedCache = "http://127.0.0.1:9000/tier" },
	} {
		other := base
		edit(&other)
		if shareKey(other) == shareKey(base) {
			t.Errorf("a different %s gives the same key: the volumes would share", name)
		}
	}
	writable := base
	writable.ReadOnly = false
	if shareable(writable) || !shareable(base) {
		t.Error("shareable: want read-only volumes only")
	}
}

func TestUnderAndFind(t *testing.T) {
	for _, tc := range []struct {
		prefix, root, sub string
		ok                bool
	}{
		{"train/", "train/", "", true},
		{"train/imagenet/", "train/", "imagenet", true},
		{"train/a/b/", "", "train/a/b", true},
		{"training/", "train/", "", false},
		{"train/", "train/imagenet/", "", false},
	} {
		sub, ok := under(tc.prefix, tc.root)
		if ok != tc.ok || sub != tc.sub {
			t.Errorf("under(%q, %q) = %q, %v; want %q, %v", tc.prefix, tc.root, sub, ok, tc.sub, tc.ok)
		}
	}
	tab := newShareTable()
	tab.byID["wide"] = &share{id: "wide", key: "k", root: ""}
	tab.byID["narrow"] = &share{id: "narrow", key: "k", root: "train/"}
	tab.byID["other"] = &share{id: "other", key: "k2", root: "train/imagenet/"}
	if s, sub := tab.find("k", "train/imagenet/"); s == nil || s.id != "narrow" || sub != "imagenet" {
		t.Errorf("find = %+v, %q; want the share of the longest root holding the prefix", s, sub)
	}
	if s, _ := tab.find("k", "val/"); s == nil || s.id != "wide" {
		t.Errorf("find(val/) = %+v, want the whole bucket's share", s)
	}
	if s, _ := tab.find("k3", "train/"); s != nil {
		t.Errorf("find of another key = %+v, want none", s)
	}
	if s, _ := tab.named("narrow", "k", "val/"); s != nil {
		t.Errorf("named share for a prefix outside its root = %+v, want none", s)
	}
}

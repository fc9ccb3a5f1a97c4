package cache

import (
	"context"
	"testing"
	"time"

	"github.com/basin-csi/basin/pkg/objstore/objstoretest"
)

// TestKnownDir: after a listing, directory questions about its entries are
// answered without the bucket; without a fresh listing they are unknown.
func TestKnownDir(t *testing.T) {
	opts := testOpts()
	opts.MetadataTTL = time.Hour
	c, fake, _ := newFixture(t, opts)
	put(t, fake, "data/train/a.bin", []byte("a"))
	put(t, fake, "data/file", []byte("f"))
	if _, known := c.KnownDir("data/train"); known {
		t.Fatal("known before any listing")
	}
	if _, err := c.List(context.Background(), "data/"); err != nil {
		t.Fatal(err)
	}
	fake.ResetCounters()
	for _, tc := range []struct {
		key          string
		isDir, known bool
	}{
		{"data/train", true, true},
		{"data/file", false, true},
		{"data/nothing", false, true},
		{"other/x", false, false},
		{"", true, true},
	} {
		isDir, known := c.KnownDir(tc.key)
		if isDir != tc.isDir || known != tc.known {
			t.Errorf("KnownDir(%q) = %v, %v; want %v, %v", tc.key, isDir, known, tc.isDir, tc.known)
		}
	}
	if n := fake.Calls(objstoretest.OpList) + fake.Calls(objstoretest.OpStat); n != 0 {
		t.Errorf("%d bucket requests", n)
	}
}

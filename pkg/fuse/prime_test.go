package fuse

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/basin-csi/basin/pkg/objstore/objstoretest"
)

// TestOpeningByNameListsOnce: a reader that opens 40 files of a directory
// by name, in no particular order and without listing it, costs one
// listing of the directory and no HEAD per file (nor for the directory:
// the root's listing shows it is one, within the negative TTL).
func TestOpeningByNameListsOnce(t *testing.T) {
	store := objstoretest.NewFake()
	for i := range 40 {
		put(t, store, fmt.Sprintf("train/%02d.jpg", i), []byte(fmt.Sprintf("image %d", i)))
	}
	tm := mountStore(t, store, mountSpec{cache: realCache, cfg: Config{MetadataTTL: time.Minute, NegativeTTL: 5 * time.Second}})
	before := store.Calls(objstoretest.OpStat)
	for _, i := range []int{17, 3, 39, 0, 25, 8, 31, 12} {
		b, err := os.ReadFile(filepath.Join(tm.dir, "train", fmt.Sprintf("%02d.jpg", i)))
		if err != nil || string(b) != fmt.Sprintf("image %d", i) {
			t.Fatalf("file %d: %q %v", i, b, err)
		}
	}
	if n := store.Calls(objstoretest.OpStat) - before; n != 0 {
		t.Errorf("%d HEADs for 8 files of a primed directory, want 0", n)
	}
	if n := store.Calls(objstoretest.OpList); n > 3 {
		t.Errorf("%d listings, want the root's and the directory's (at most 3)", n)
	}
}

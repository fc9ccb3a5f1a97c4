package epoch

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/basin-csi/basin/bench/dataset"
)

// TestReadAndVerify reads a small set written to a directory, from the
// bucket's root and from the set's own directory, then finds a file
// changed and one cut short.
func TestReadAndVerify(t *testing.T) {
	ctx := context.Background()
	root := t.TempDir()
	set := dataset.Small(40, 4<<10, 4)
	set.Name = "epoch-small"
	if _, err := dataset.Write(ctx, dataset.DirSink{Root: root}, set, 4, nil); err != nil {
		t.Fatal(err)
	}
	for _, inSetDir := range []bool{false, true} {
		dir, missing := root, ""
		if inSetDir {
			dir, missing = filepath.Join(root, set.Name), set.Prefix()
		}
		keys := Keys(set, 1, inSetDir)
		r, err := Read(ctx, dir, keys, set, 3, nil)
		if err != nil || r.Files != 40 || r.Bytes != set.TotalBytes() || r.Errors != 0 {
			t.Fatalf("inSetDir %v: Read = %+v, %v", inSetDir, r, err)
		}
		if err := VerifySample(dir, set, keys, missing); err != nil {
			t.Fatalf("inSetDir %v: %v", inSetDir, err)
		}
	}
	keys := Keys(set, 1, false)
	if err := os.WriteFile(filepath.Join(root, keys[0]), make([]byte, set.FileSize), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := VerifySample(root, set, keys, ""); err == nil {
		t.Fatal("VerifySample passed a file of zeros")
	}
	if err := os.Truncate(filepath.Join(root, keys[1]), 10); err != nil {
		t.Fatal(err)
	}
	r, err := Read(ctx, root, keys, set, 2, nil)
	if err != nil || r.Errors != 1 || r.Files != 40 {
		t.Fatalf("Read with a short file = %+v, %v; want 1 error of 40 files", r, err)
	}
}

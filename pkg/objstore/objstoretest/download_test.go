package objstoretest

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/basin-csi/basin/pkg/objstore"
)

// TestRangedDownloadToFile checks that a download into a file writes every
// part at its offset, including a short last part.
func TestRangedDownloadToFile(t *testing.T) {
	ctx := context.Background()
	f := NewFake()
	data := make([]byte, 10*1000+7)
	for i := range data {
		data[i] = byte(i * 7)
	}
	info, err := f.Put(ctx, "obj", bytes.NewReader(data), objstore.PutOptions{Size: int64(len(data))})
	if err != nil {
		t.Fatal(err)
	}
	out, err := os.Create(filepath.Join(t.TempDir(), "download"))
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = out.Close() }()
	if err := RangedDownload(ctx, f, info, 1000, 3, out); err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(out.Name())
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, data) {
		t.Errorf("downloaded %d bytes differing from the object's %d", len(got), len(data))
	}
	if err := RangedDownload(ctx, f, info, 1000, 3, nil); err != nil {
		t.Errorf("download into memory: %v", err)
	}
}

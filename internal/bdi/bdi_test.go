package bdi

import (
	"os"
	"path/filepath"
	"testing"

	"golang.org/x/sys/unix"
)

func TestSetReadAhead(t *testing.T) {
	root := t.TempDir()
	dev := unix.Mkdev(0, 57)
	dir := filepath.Join(root, "0:57")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "read_ahead_kb"), []byte("128\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if got, err := readAhead(root, dev); err != nil || got != 128<<10 {
		t.Fatalf("read-ahead %d, %v", got, err)
	}
	if err := setReadAhead(root, dev, DefaultReadAhead); err != nil {
		t.Fatal(err)
	}
	if got, err := readAhead(root, dev); err != nil || got != DefaultReadAhead {
		t.Errorf("after set: %d, %v", got, err)
	}
	if err := setReadAhead(root, unix.Mkdev(0, 58), DefaultReadAhead); err == nil {
		t.Error("no error for a device that does not exist")
	}
	if err := setReadAhead(root, dev, 0); err == nil {
		t.Error("no error for a zero read-ahead")
	}
}

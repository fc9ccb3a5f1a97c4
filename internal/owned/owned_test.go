package owned

import (
	"os"
	"path/filepath"
	"testing"
)

func TestCheck(t *testing.T) {
	dir := t.TempDir()
	f := filepath.Join(dir, "f")
	if err := os.WriteFile(f, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(f, 0o600); err != nil {
		t.Fatal(err)
	}
	st, err := os.Stat(f)
	if err != nil {
		t.Fatal(err)
	}
	if err := Check(st, 0o600); err != nil {
		t.Errorf("a 0600 file of ours: %v", err)
	}
	if err := Check(st, 0o644); err == nil {
		t.Error("a 0600 file passed as 0644")
	}
	if err := Check(st, os.ModeDir|0o600); err == nil {
		t.Error("a file passed as a directory")
	}
}

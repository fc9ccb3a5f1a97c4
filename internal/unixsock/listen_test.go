package unixsock

import (
	"os"
	"path/filepath"
	"testing"
)

func TestListen(t *testing.T) {
	dir, err := os.MkdirTemp("", "us-") // short: sun_path limit
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = os.RemoveAll(dir) }()
	sock := filepath.Join(dir, "s.sock")
	lis, err := Listen(sock)
	if err != nil {
		t.Fatal(err)
	}
	// Leave it behind as a crashed process would; a second Listen replaces it.
	if ul, ok := lis.(interface{ SetUnlinkOnClose(bool) }); ok {
		ul.SetUnlinkOnClose(false)
	}
	_ = lis.Close()
	lis, err = Listen(sock)
	if err != nil {
		t.Fatalf("over a stale socket: %v", err)
	}
	_ = lis.Close()
	file := filepath.Join(dir, "file")
	if err := os.WriteFile(file, []byte("keep"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := Listen(file); err == nil {
		t.Fatal("Listen replaced a regular file")
	}
	if b, _ := os.ReadFile(file); string(b) != "keep" {
		t.Errorf("the regular file changed: %q", b)
	}
}

package fuse

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"github.com/hanwen/go-fuse/v2/splice"
)

// TestReadRepliesGoFuseSendsDirectly: a data reply is one go-fuse writes
// with writev (no splice attempt), and a file reply is spliced only when
// it fits the pipe; a larger one is read into the caller's buffer, byte
// for byte.
func TestReadRepliesGoFuseSendsDirectly(t *testing.T) {
	if _, ok := dataReply([]byte("abc")).(vectored); !ok {
		t.Fatal("dataReply is not vectored")
	}
	pipe := splice.MaxPipeSize()
	size := pipe + 4096
	content := bytes.Repeat([]byte("0123456789abcdef"), size/16+1)[:size]
	path := filepath.Join(t.TempDir(), "data")
	if err := os.WriteFile(path, content, 0o600); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = f.Close() }()

	small := pipe - spliceMargin
	res, err := fileReply(f, make([]byte, small), 16, small)
	if err != nil {
		t.Fatal(err)
	}
	if s, ok := res.(seekable); !ok {
		t.Errorf("a reply of %d bytes (pipe %d) is not spliced", small, pipe)
	} else if fd, off, sz := s.Seekable(); fd != f.Fd() || off != 16 || sz != small {
		t.Errorf("Seekable() = %d %d %d", fd, off, sz)
	}

	big := pipe
	dest := make([]byte, big)
	res, err = fileReply(f, dest, 100, big)
	if err != nil {
		t.Fatal(err)
	}
	v, ok := res.(vectored)
	if !ok {
		t.Fatalf("a reply of %d bytes (pipe %d) is %T, not data", big, pipe, res)
	}
	got, _ := v.Slices()
	if len(got) != 1 || !bytes.Equal(got[0], content[100:100+big]) {
		t.Errorf("the reply's bytes differ from the file's")
	}

	if _, err := fileReply(f, make([]byte, big), int64(size-10), big); err == nil {
		t.Error("a read past the file's end gave no error")
	}
}

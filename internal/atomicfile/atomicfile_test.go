package atomicfile

import (
	"bytes"
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// entries lists a directory's names.
func entries(t *testing.T, dir string) []string {
	t.Helper()
	des, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, de := range des {
		names = append(names, de.Name())
	}
	return names
}

func TestWriteFileRoundTrip(t *testing.T) {
	for _, d := range []Durability{Durable, NoSync} {
		dir := t.TempDir()
		path := filepath.Join(dir, "state.json")
		for _, content := range [][]byte{[]byte(`{"v":1}`), []byte("second, longer content\n"), {}} {
			if err := WriteFile(path, content, 0o600, d); err != nil {
				t.Fatalf("durability %d: %v", d, err)
			}
			got, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got, content) {
				t.Fatalf("durability %d: read %q, wrote %q", d, got, content)
			}
		}
		if names := entries(t, dir); len(names) != 1 || names[0] != "state.json" {
			t.Errorf("durability %d: directory holds %v, want only state.json", d, names)
		}
	}
}

func TestWriteLarge(t *testing.T) {
	path := filepath.Join(t.TempDir(), "big")
	want := bytes.Repeat([]byte("0123456789abcdef"), 64<<10) // 1 MiB, past the buffer
	err := Write(path, 0o644, Durable, func(w io.Writer) error {
		for rest := want; len(rest) > 0; {
			n := min(len(rest), 1000)
			if _, err := w.Write(rest[:n]); err != nil {
				return err
			}
			rest = rest[n:]
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("read %d bytes, wrote %d", len(got), len(want))
	}
}

func TestWriteFileMode(t *testing.T) {
	old := syscall.Umask(0o077) // the mode is exact, whatever the umask
	defer syscall.Umask(old)
	dir := t.TempDir()
	for _, perm := range []fs.FileMode{0o600, 0o640, 0o644, 0o400} {
		path := filepath.Join(dir, perm.String())
		if err := WriteFile(path, []byte("x"), perm, Durable); err != nil {
			t.Fatal(err)
		}
		st, err := os.Stat(path)
		if err != nil {
			t.Fatal(err)
		}
		if st.Mode() != perm {
			t.Errorf("mode %v, want %v", st.Mode(), perm)
		}
	}
	// Replacing a file gives the new file the mode asked for.
	path := filepath.Join(dir, "replaced")
	if err := os.WriteFile(path, []byte("old"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := WriteFile(path, []byte("new"), 0o600, NoSync); err != nil {
		t.Fatal(err)
	}
	if st, err := os.Stat(path); err != nil || st.Mode() != 0o600 {
		t.Errorf("replaced file: %v, %v; want mode 0600", st.Mode(), err)
	}
}

func TestWriteFailureLeavesOldContentAndNoTemp(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "f")
	if err := WriteFile(path, []byte("old"), 0o600, Durable); err != nil {
		t.Fatal(err)
	}
	boom := errors.New("boom")
	err := Write(path, 0o600, Durable, func(w io.Writer) error {
		if _, err := w.Write([]byte("half of the new")); err != nil {
			return err
		}
		return boom
	})
	if !errors.Is(err, boom) {
		t.Fatalf("err = %v, want boom", err)
	}
	if !strings.Contains(err.Error(), path) {
		t.Errorf("error %q does not name %s", err, path)
	}
	if got, err := os.ReadFile(path); err != nil || string(got) != "old" {
		t.Errorf("after a failed write: %q, %v; want the old content", got, err)
	}
	if names := entries(t, dir); len(names) != 1 || names[0] != "f" {
		t.Errorf("directory holds %v after a failed write, want only f", names)
	}
}

func TestWriteRenameFailureLeavesNoTemp(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "target")
	if err := os.Mkdir(path, 0o700); err != nil { // a file cannot replace a directory
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(path, "child"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := WriteFile(path, []byte("x"), 0o600, Durable); err == nil {
		t.Fatal("replacing a directory succeeded")
	}
	if names := entries(t, dir); len(names) != 1 || names[0] != "target" {
		t.Errorf("directory holds %v after a failed rename, want only target", names)
	}
}

func TestWriteMissingDirectory(t *testing.T) {
	path := filepath.Join(t.TempDir(), "missing", "f")
	if err := WriteFile(path, []byte("x"), 0o600, Durable); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("err = %v, want ErrNotExist", err)
	}
}

func TestWriteRelativePath(t *testing.T) {
	t.Chdir(t.TempDir())
	if err := WriteFile("rel", []byte("x"), 0o600, Durable); err != nil {
		t.Fatal(err)
	}
	if got, err := os.ReadFile("rel"); err != nil || string(got) != "x" {
		t.Fatalf("read %q, %v", got, err)
	}
}

package owned

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
	"testing"
)

// writePrivate writes b to dir/name with exactly mode (umask aside).
func writePrivate(t *testing.T, dir, name string, b []byte, mode os.FileMode) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, b, mode); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(p, mode); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestCheck(t *testing.T) {
	f := writePrivate(t, t.TempDir(), "f", nil, 0o600)
	st, err := os.Stat(f)
	if err != nil {
		t.Fatal(err)
	}
	if err := Check(st, 0o600); err != nil {
		t.Errorf("a 0600 file of ours: %v", err)
	}
	if err := Check(st, 0o644); !errors.Is(err, ErrUnsafe) {
		t.Errorf("a 0600 file as 0644: %v, want ErrUnsafe", err)
	}
	if err := Check(st, os.ModeDir|0o600); !errors.Is(err, ErrUnsafe) {
		t.Errorf("a file as a directory: %v, want ErrUnsafe", err)
	}
}

func TestEnsureDir(t *testing.T) {
	base := t.TempDir()
	for _, tc := range []struct {
		name    string
		setup   func(t *testing.T, dir string)
		wantErr error
	}{
		{"missing: created", func(*testing.T, string) {}, nil},
		{"existing 0700", func(t *testing.T, dir string) { mkdir(t, dir, 0o700) }, nil},
		{"group readable", func(t *testing.T, dir string) { mkdir(t, dir, 0o750) }, ErrUnsafe},
		{"a file", func(t *testing.T, dir string) { writePrivate(t, filepath.Dir(dir), filepath.Base(dir), nil, 0o600) }, syscall.ENOTDIR},
		{"a symbolic link to a 0700 directory", func(t *testing.T, dir string) {
			target := dir + ".target"
			mkdir(t, target, 0o700)
			if err := os.Symlink(target, dir); err != nil {
				t.Fatal(err)
			}
		}, ErrUnsafe},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := filepath.Join(base, filepath.Base(t.Name()))
			tc.setup(t, dir)
			err := EnsureDir(dir)
			if tc.wantErr == nil && err != nil {
				t.Fatalf("EnsureDir: %v", err)
			}
			if tc.wantErr != nil && !errors.Is(err, tc.wantErr) {
				t.Fatalf("EnsureDir: %v, want %v", err, tc.wantErr)
			}
			if err == nil {
				if st, err := os.Lstat(dir); err != nil || st.Mode() != os.ModeDir|0o700 {
					t.Errorf("after EnsureDir: %v, %v", st, err)
				}
			}
		})
	}
}

func mkdir(t *testing.T, dir string, mode os.FileMode) {
	t.Helper()
	if err := os.Mkdir(dir, mode); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(dir, mode); err != nil {
		t.Fatal(err)
	}
}

func TestReadFile(t *testing.T) {
	dir := t.TempDir()
	ok := writePrivate(t, dir, "ok", []byte("secret"), 0o600)
	big := writePrivate(t, dir, "big", []byte("0123456789"), 0o600)
	wide := writePrivate(t, dir, "wide", []byte("x"), 0o644)
	link := filepath.Join(dir, "link")
	if err := os.Symlink(ok, link); err != nil {
		t.Fatal(err)
	}
	if b, err := ReadFile(ok, 6); err != nil || string(b) != "secret" {
		t.Errorf("ReadFile(ok) = %q, %v", b, err)
	}
	for _, tc := range []struct {
		name    string
		path    string
		wantErr error
	}{
		{"larger than the limit", big, ErrUnsafe},
		{"0644", wide, ErrUnsafe},
		{"missing", filepath.Join(dir, "none"), fs.ErrNotExist},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := ReadFile(tc.path, 6); !errors.Is(err, tc.wantErr) {
				t.Errorf("ReadFile: %v, want %v", err, tc.wantErr)
			}
		})
	}
	if _, err := ReadFile(link, 6); err == nil {
		t.Error("ReadFile followed a symbolic link")
	}
	if _, err := os.Stat(ok); err != nil {
		t.Errorf("ReadFile removed the file: %v", err)
	}
}

func TestTakeFileRemovesEvenARefusedFile(t *testing.T) {
	dir := t.TempDir()
	ok := writePrivate(t, dir, "ok", []byte("secret"), 0o600)
	wide := writePrivate(t, dir, "wide", []byte("x"), 0o644)
	if b, err := TakeFile(ok, 1<<10); err != nil || string(b) != "secret" {
		t.Errorf("TakeFile(ok) = %q, %v", b, err)
	}
	if _, err := TakeFile(wide, 1<<10); !errors.Is(err, ErrUnsafe) {
		t.Errorf("TakeFile(0644): %v, want ErrUnsafe", err)
	}
	for _, p := range []string{ok, wide} {
		if _, err := os.Lstat(p); !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("%s is still there: %v", p, err)
		}
	}
}

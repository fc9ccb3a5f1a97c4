package supervisor

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"testing"

	"github.com/basin-csi/basin/internal/testserver"
	"github.com/basin-csi/basin/pkg/objstore"
)

func TestCredentialsFileRoundTrip(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "creds")
	for _, c := range []objstore.Credentials{
		{AccessKeyID: "AKID", SecretAccessKey: "secret", SessionToken: "token"},
		{GCSCredentialsJSON: []byte(`{"type":"service_account"}`)},
	} {
		path, err := WriteCredentialsFile(dir, c)
		if err != nil {
			t.Fatal(err)
		}
		st, err := os.Stat(path)
		if err != nil || st.Mode() != 0o600 {
			t.Fatalf("file mode %v, %v; want 0600", st.Mode(), err)
		}
		if dst, _ := os.Stat(dir); dst.Mode() != os.ModeDir|0o700 {
			t.Errorf("dir mode %v, want 0700", dst.Mode())
		}
		got, err := ReadCredentialsFile(path)
		if err != nil {
			t.Fatal(err)
		}
		if got.AccessKeyID != c.AccessKeyID || got.SecretAccessKey != c.SecretAccessKey ||
			got.SessionToken != c.SessionToken || string(got.GCSCredentialsJSON) != string(c.GCSCredentialsJSON) {
			t.Errorf("read back %#v", got)
		}
		if _, err := os.Stat(path); !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("the file survived the read: %v", err)
		}
	}
}

func TestReadCredentialsFileRefuses(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct {
		name  string
		setup func(path string)
	}{
		{"group readable", func(p string) { _ = os.WriteFile(p, []byte(`{}`), 0o640); _ = os.Chmod(p, 0o640) }},
		{"symlink", func(p string) {
			target := p + ".real"
			_ = os.WriteFile(target, []byte(`{}`), 0o600)
			_ = os.Symlink(target, p)
		}},
		{"not ours", func(p string) { _ = os.WriteFile(p, []byte(`{}`), 0o600); _ = os.Chown(p, 4242, 4242) }},
		{"unknown field", func(p string) { _ = os.WriteFile(p, []byte(`{"password":"x"}`), 0o600) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.name == "not ours" {
				testserver.RequireRoot(t, "chown to another user")
			}
			path := filepath.Join(dir, tc.name)
			tc.setup(path)
			if _, err := ReadCredentialsFile(path); err == nil {
				t.Fatal("read succeeded")
			}
			if tc.name != "symlink" {
				if _, err := os.Lstat(path); !errors.Is(err, fs.ErrNotExist) {
					t.Errorf("a refused file was left behind: %v", err)
				}
			}
		})
	}
}

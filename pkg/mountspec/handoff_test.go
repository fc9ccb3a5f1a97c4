package mountspec

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/basin-csi/basin/internal/mountdefaults"
	"github.com/basin-csi/basin/internal/testserver"
	"github.com/basin-csi/basin/pkg/objstore"
)

func testSpec() Spec {
	s := Default()
	s.Bucket, s.Prefix, s.Endpoint, s.PathStyle = "bkt", "data/", "http://127.0.0.1:9000", true
	s.MetadataTTL, s.UID = Forever, 1000
	s.MountOptions = []string{"noexec"}
	return s
}

func TestHandoffFileRoundTrip(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "handoff")
	for _, c := range []objstore.Credentials{
		{},
		{AccessKeyID: "AKID", SecretAccessKey: "secret", SessionToken: "token"},
		{GCSCredentialsJSON: []byte(`{"type":"service_account"}`)},
	} {
		want := Handoff{Spec: testSpec(), Credentials: c}
		if c.AccessKeyID != "" {
			want.Spec.SharedCache = "http://127.0.0.1:9100/tier"
			want.SharedCacheCredentials = objstore.Credentials{AccessKeyID: "TIERKEY", SecretAccessKey: "tiersecret"}
		}
		path, err := WriteHandoffFile(dir, want)
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
		got, err := ReadHandoffFile(path)
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("read back %+v\nwant %+v", got, want)
		}
		if _, err := os.Stat(path); !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("the file survived the read: %v", err)
		}
	}
}

func TestWriteHandoffFileRefusesInvalidSpec(t *testing.T) {
	s := testSpec()
	s.CacheBlockSize = 1000
	if _, err := WriteHandoffFile(t.TempDir(), Handoff{Spec: s}); !errors.Is(err, ErrInvalid) {
		t.Errorf("err = %v, want ErrInvalid", err)
	}
}

// writeRaw writes a hand-off file with spec replaced by the JSON object
// edit makes of it.
func writeRaw(t *testing.T, path string, edit func(m map[string]any)) {
	b, _ := json.Marshal(testSpec())
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	edit(m)
	out, _ := json.Marshal(map[string]any{"spec": m, "credentials": map[string]string{"secretAccessKey": "hunter2"}})
	if err := os.WriteFile(path, out, 0o600); err != nil {
		t.Fatal(err)
	}
}

func TestReadHandoffFileRefuses(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct {
		name  string
		setup func(t *testing.T, path string)
		want  error
	}{
		{"group readable", func(_ *testing.T, p string) { _ = os.WriteFile(p, []byte(`{}`), 0o640); _ = os.Chmod(p, 0o640) }, ErrHandoffFile},
		{"symlink", func(_ *testing.T, p string) {
			target := p + ".real"
			_ = os.WriteFile(target, []byte(`{}`), 0o600)
			_ = os.Symlink(target, p)
		}, nil},
		{"not ours", func(_ *testing.T, p string) { _ = os.WriteFile(p, []byte(`{}`), 0o600); _ = os.Chown(p, 4242, 4242) }, ErrHandoffFile},
		{"unknown top-level field", func(_ *testing.T, p string) { _ = os.WriteFile(p, []byte(`{"password":"x"}`), 0o600) }, ErrHandoffFile},
		{"broken JSON", func(_ *testing.T, p string) {
			_ = os.WriteFile(p, []byte(`{"credentials":{"secretAccessKey":"hunter2"}}hunter2`), 0o600)
		}, ErrHandoffFile},
		{"syntax error in a secret", func(_ *testing.T, p string) {
			_ = os.WriteFile(p, []byte(`{"credentials":{"secretAccessKey":hunter2}}`), 0o600)
		}, ErrHandoffFile},
		{"newer version", func(t *testing.T, p string) {
			writeRaw(t, p, func(m map[string]any) { m["version"] = Version + 1; m["newSetting"] = true })
		}, ErrVersion},
		{"no version", func(t *testing.T, p string) { writeRaw(t, p, func(m map[string]any) { delete(m, "version") }) }, ErrVersion},
		{"unknown spec field", func(t *testing.T, p string) { writeRaw(t, p, func(m map[string]any) { m["cacheSzie"] = 1 }) }, ErrInvalid},
		{"invalid spec", func(t *testing.T, p string) { writeRaw(t, p, func(m map[string]any) { m["maxParallelFetches"] = 0 }) }, ErrInvalid},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.name == "not ours" {
				testserver.RequireRoot(t, "chown to another user")
			}
			path := filepath.Join(dir, strings.ReplaceAll(tc.name, " ", "-"))
			tc.setup(t, path)
			_, err := ReadHandoffFile(path)
			if err == nil {
				t.Fatal("read succeeded")
			}
			if tc.want != nil && !errors.Is(err, tc.want) {
				t.Errorf("err = %v, want %v", err, tc.want)
			}
			if strings.Contains(err.Error(), "hunter2") {
				t.Errorf("the error quotes a secret: %v", err)
			}
			if tc.name != "symlink" {
				if _, err := os.Lstat(path); !errors.Is(err, fs.ErrNotExist) {
					t.Errorf("a refused file was left behind: %v", err)
				}
			}
		})
	}
}

func TestValidate(t *testing.T) {
	for name, edit := range map[string]func(s *Spec){
		"no bucket":          func(s *Spec) { s.Bucket = "" },
		"version":            func(s *Spec) { s.Version = 2 },
		"block size":         func(s *Spec) { s.CacheBlockSize = 2 << 30 },
		"block size unit":    func(s *Spec) { s.CacheBlockSize = 6000 },
		"negative TTL":       func(s *Spec) { s.MetadataTTL = -2 * time.Second },
		"negative readahead": func(s *Spec) { s.ReadAhead = -1 },
		"fetches":            func(s *Spec) { s.MaxParallelFetches = MaxParallelFetches + 1 },
		"prefetch budget":    func(s *Spec) { s.PrefetchBudget = 0 },
		"buffer size":        func(s *Spec) { s.BufferSize = MinBufferSize - 1 },
		"op timeout":         func(s *Spec) { s.OpTimeout = 0 },
		"uid":                func(s *Spec) { s.UID = MaxID + 1 },
		"mode":               func(s *Spec) { s.FileMode = 0o4755 },
		"mount option":       func(s *Spec) { s.MountOptions = []string{"suid"} },
		"prefix":             func(s *Spec) { s.Prefix = "/a" },
		"open mode":          func(s *Spec) { s.OpenMode = "client"; s.ReadOnly = true },
		"kernel opens, rw":   func(s *Spec) { s.OpenMode = mountdefaults.OpenKernel },
	} {
		t.Run(name, func(t *testing.T) {
			s := testSpec()
			edit(&s)
			if err := s.Validate(); err == nil {
				t.Errorf("Validate accepted %+v", s)
			}
		})
	}
	if err := testSpec().Validate(); err != nil {
		t.Errorf("valid spec: %v", err)
	}
	for name, edit := range map[string]func(s *Spec){
		"kernel opens, read-only":       func(s *Spec) { s.OpenMode, s.ReadOnly = mountdefaults.OpenKernel, true },
		"kernel opens, ro option":       func(s *Spec) { s.OpenMode, s.MountOptions = mountdefaults.OpenKernel, []string{"ro"} },
		"open mode of an older writer":  func(s *Spec) { s.OpenMode = "" },
		"no buffer size (older writer)": func(s *Spec) { s.BufferSize = 0 },
	} {
		s := testSpec()
		edit(&s)
		if err := s.Validate(); err != nil {
			t.Errorf("%s: %v", name, err)
		}
	}
}

// TestOpenModeRefusalsNameTheKey: the refusals name the attribute and the
// accepted values or the alternative.
func TestOpenModeRefusalsNameTheKey(t *testing.T) {
	for _, tc := range []struct {
		m        mountdefaults.OpenMode
		readOnly bool
		want     []string
	}{
		{"client", true, []string{"openMode", `"client"`, `"server"`, `"kernel"`}},
		{mountdefaults.OpenKernel, false, []string{"openMode", "read-only", `"server"`}},
	} {
		s := Default()
		s.Bucket, s.OpenMode, s.ReadOnly = "b12", tc.m, tc.readOnly
		err := s.Validate()
		if !errors.Is(err, ErrInvalid) {
			t.Errorf("openMode %q, read-only %v: %v, want ErrInvalid", tc.m, tc.readOnly, err)
			continue
		}
		for _, w := range tc.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("openMode %q, read-only %v: %q, want it to name %s", tc.m, tc.readOnly, err, w)
			}
		}
	}
}

func TestCredentialsJSONRoundTripAndRedaction(t *testing.T) {
	for _, c := range []objstore.Credentials{
		{},
		{AccessKeyID: "AKID", SecretAccessKey: "secret", SessionToken: "token"},
		{GCSCredentialsJSON: []byte(`{"type":"service_account"}`)},
	} {
		cj := EncodeCredentials(c)
		b, err := json.Marshal(cj)
		if err != nil {
			t.Fatal(err)
		}
		var back CredentialsJSON
		if err := json.Unmarshal(b, &back); err != nil {
			t.Fatal(err)
		}
		if got := back.Credentials(); !reflect.DeepEqual(got, c) {
			t.Errorf("round trip of %v gave %v", c, got)
		}
		for _, s := range []string{"secret", "token", "service_account"} {
			if out := fmt.Sprintf("%v %+v %#v %s", cj, cj, cj, cj); strings.Contains(out, s) {
				t.Errorf("formatting shows %q: %s", s, out)
			}
		}
	}
}

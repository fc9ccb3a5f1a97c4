package gcsstore

import (
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/basin-csi/basin/pkg/objstore"
)

func TestCheckConfig(t *testing.T) {
	good := objstore.Config{Backend: objstore.BackendGCS, Bucket: "b"}
	cases := []struct {
		name       string
		mutate     func(*objstore.Config)
		needBucket bool
		ok         bool
	}{
		{"minimal", func(*objstore.Config) {}, true, true},
		{"emulator endpoint", func(c *objstore.Config) { c.Endpoint = "http://127.0.0.1:4443" }, true, true},
		{"admin without bucket", func(c *objstore.Config) { c.Bucket = "" }, false, true},
		{"store without bucket", func(c *objstore.Config) { c.Bucket = "" }, true, false},
		{"other backend", func(c *objstore.Config) { c.Backend = objstore.BackendS3 }, true, false},
		{"no backend", func(c *objstore.Config) { c.Backend = "" }, true, false},
		{"endpoint without scheme", func(c *objstore.Config) { c.Endpoint = "127.0.0.1:4443" }, true, false},
		{"endpoint ftp", func(c *objstore.Config) { c.Endpoint = "ftp://h" }, true, false},
		{"negative timeout", func(c *objstore.Config) { c.RequestTimeout = -time.Second }, true, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			cfg := good
			c.mutate(&cfg)
			got, err := checkConfig(cfg, c.needBucket)
			if c.ok {
				if err != nil {
					t.Fatalf("checkConfig: %v", err)
				}
				if got.RequestTimeout != objstore.DefaultRequestTimeout || got.MaxAttempts != objstore.DefaultMaxAttempts {
					t.Errorf("defaults not applied: %+v", got)
				}
				return
			}
			if !errors.Is(err, objstore.ErrInvalidConfig) {
				t.Errorf("checkConfig = %v, want ErrInvalidConfig", err)
			}
		})
	}
}

// secretMarker stands for key material that must never reach an error.
const secretMarker = "SUPER-SECRET-KEY-MATERIAL"

// serviceAccountJSON is a syntactically valid service-account key with a
// freshly generated RSA key (never used to reach Google).
func serviceAccountJSON(t *testing.T, project string) []byte {
	t.Helper()
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	der, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	m := map[string]string{
		"type":           "service_account",
		"client_email":   "basin@example.iam.gserviceaccount.com",
		"client_id":      "1",
		"private_key_id": secretMarker,
		"private_key":    string(pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der})),
		"token_uri":      "http://127.0.0.1:1/token",
	}
	if project != "" {
		m["project_id"] = project
	}
	b, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestParseCredentials(t *testing.T) {
	cases := []struct {
		name    string
		json    string
		project string
		ok      bool
	}{
		{"service account", `{"type":"service_account","project_id":"p1","private_key":"` + secretMarker + `"}`, "p1", true},
		{"external account", `{"type":"external_account","audience":"a"}`, "", true},
		{"authorized user refused", `{"type":"authorized_user","refresh_token":"` + secretMarker + `"}`, "", false},
		{"no type", `{"private_key":"` + secretMarker + `"}`, "", false},
		{"not JSON", `private_key=` + secretMarker, "", false},
		{"truncated JSON", `{"type":"service_account","private_key":"` + secretMarker, "", false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, project, err := parseCredentials([]byte(c.json))
			if c.ok {
				if err != nil || project != c.project {
					t.Errorf("parseCredentials = %q, %v; want %q", project, err, c.project)
				}
				return
			}
			if !errors.Is(err, objstore.ErrInvalidConfig) {
				t.Errorf("parseCredentials = %v, want ErrInvalidConfig", err)
			}
			if err != nil && strings.Contains(err.Error(), secretMarker) {
				t.Errorf("error leaks the credentials: %v", err)
			}
		})
	}
}

func TestAdminProject(t *testing.T) {
	cfg := objstore.Config{Backend: objstore.BackendGCS}
	t.Run("from credentials JSON first", func(t *testing.T) {
		t.Setenv(projectEnv, "from-env")
		a, err := NewAdmin(t.Context(), cfg, objstore.Credentials{GCSCredentialsJSON: serviceAccountJSON(t, "from-json")})
		if err != nil {
			t.Fatal(err)
		}
		defer func() { _ = a.Close() }()
		if a.project != "from-json" {
			t.Errorf("project = %q, want from-json", a.project)
		}
	})
	t.Run("else from the environment", func(t *testing.T) {
		t.Setenv(projectEnv, "from-env")
		a, err := NewAdmin(t.Context(), cfg, objstore.Credentials{GCSCredentialsJSON: serviceAccountJSON(t, "")})
		if err != nil {
			t.Fatal(err)
		}
		defer func() { _ = a.Close() }()
		if a.project != "from-env" {
			t.Errorf("project = %q, want from-env", a.project)
		}
	})
	t.Run("none: CreateBucket refuses before any request", func(t *testing.T) {
		t.Setenv(projectEnv, "")
		a, err := NewAdmin(t.Context(), cfg, objstore.Credentials{GCSCredentialsJSON: serviceAccountJSON(t, "")})
		if err != nil {
			t.Fatal(err)
		}
		defer func() { _ = a.Close() }()
		err = a.CreateBucket(t.Context(), "basin-no-project")
		if !errors.Is(err, objstore.ErrInvalidConfig) {
			t.Errorf("CreateBucket without project = %v, want ErrInvalidConfig", err)
		}
	})
}

// TestCredentialErrorsHideSecrets uses credentials whose token endpoint is
// unreachable: the call fails, and no error may quote the key file.
func TestCredentialErrorsHideSecrets(t *testing.T) {
	creds := objstore.Credentials{GCSCredentialsJSON: serviceAccountJSON(t, "p")}
	cfg := objstore.Config{
		Backend: objstore.BackendGCS, Bucket: "b", Endpoint: "http://127.0.0.1:1",
		RequestTimeout: 5 * time.Second, MaxAttempts: 1,
	}
	s, err := New(t.Context(), cfg, creds)
	if err != nil {
		if strings.Contains(err.Error(), secretMarker) || strings.Contains(err.Error(), "PRIVATE KEY") {
			t.Fatalf("New error leaks the credentials: %v", err)
		}
		t.Fatalf("New: %v", err)
	}
	defer func() { _ = s.Close() }()
	_, err = s.Stat(t.Context(), "k")
	if err == nil {
		t.Fatal("Stat with an unreachable token endpoint succeeded")
	}
	if msg := err.Error(); strings.Contains(msg, secretMarker) || strings.Contains(msg, "PRIVATE KEY") {
		t.Errorf("Stat error leaks the credentials: %v", err)
	}
	if got := creds.String(); strings.Contains(got, secretMarker) {
		t.Errorf("Credentials.String leaks: %s", got)
	}
}

func TestChunkSize(t *testing.T) {
	const k = 256 << 10
	cases := []struct {
		part, size int64
		want       int
	}{
		{8 << 20, -1, 8 << 20},
		{8 << 20, 0, k},
		{8 << 20, 100, k},
		{8 << 20, k - 1, k},
		{8 << 20, k, 2 * k}, // one spare byte: the SDK then sends one request
		{8 << 20, 8 << 20, 8 << 20},
		{8 << 20, 100 << 20, 8 << 20},
		{100 << 10, -1, k}, // rounded up to GCS's granularity
		{k + 1, -1, 2 * k},
	}
	for _, c := range cases {
		if got := chunkSize(c.part, c.size); got != c.want {
			t.Errorf("chunkSize(%d, %d) = %d, want %d", c.part, c.size, got, c.want)
		}
	}
}

func TestCheckKey(t *testing.T) {
	cases := []struct {
		key string
		ok  bool
	}{
		{"a", true},
		{"dir/", true},
		{"a/.../b", true},
		{".hidden/x", true},
		{"日本語/ファイル", true},
		{strings.Repeat("k", 1024), true},
		{"", false},
		{strings.Repeat("k", 1025), false},
		{"a\nb", false},
		{"a\rb", false},
		{"\xff\xfe", false},
		{".", false},
		{"..", false},
		{"a/../b", false},
		{"./x", false},
		{"x/.", false},
		{".well-known/acme-challenge/token", false},
	}
	for _, c := range cases {
		err := checkKey(c.key)
		if c.ok != (err == nil) {
			t.Errorf("checkKey(%q) = %v, want ok=%v", c.key, err, c.ok)
		}
		if err != nil && !errors.Is(err, objstore.ErrInvalidKey) {
			t.Errorf("checkKey(%q) = %v, want ErrInvalidKey", c.key, err)
		}
	}
}

func TestJSONEndpoint(t *testing.T) {
	for in, want := range map[string]string{
		"http://127.0.0.1:4443":                  "http://127.0.0.1:4443/storage/v1/",
		"http://127.0.0.1:4443/":                 "http://127.0.0.1:4443/storage/v1/",
		"http://127.0.0.1:4443/storage/v1/":      "http://127.0.0.1:4443/storage/v1/",
		"https://storage.example.com/storage/v1": "https://storage.example.com/storage/v1/",
	} {
		if got := jsonEndpoint(in); got != want {
			t.Errorf("jsonEndpoint(%q) = %q, want %q", in, got, want)
		}
	}
}

package gcsstore

import (
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"errors"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync"
	"testing"

	"github.com/basin-csi/basin/pkg/objstore"
)

// tokenServer is an OAuth token endpoint for service-account JWT grants:
// it answers with the token "token-for-<client_email>".
func tokenServer(t *testing.T) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if err := r.ParseForm(); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		parts := strings.Split(r.PostForm.Get("assertion"), ".")
		if len(parts) != 3 {
			http.Error(w, "no JWT assertion", http.StatusBadRequest)
			return
		}
		payload, err := base64.RawURLEncoding.DecodeString(parts[1])
		var claims struct {
			Iss string `json:"iss"`
		}
		if err != nil || json.Unmarshal(payload, &claims) != nil || claims.Iss == "" {
			http.Error(w, "bad JWT payload", http.StatusBadRequest)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]any{
			"access_token": "token-for-" + claims.Iss, "token_type": "Bearer", "expires_in": 3600,
		})
	}))
	t.Cleanup(srv.Close)
	return srv
}

// authProxy forwards to the emulator only requests whose bearer token is
// the one currently accepted (the emulator itself ignores authentication),
// so a revoked token fails like it would on GCS.
type authProxy struct {
	srv *httptest.Server

	mu     sync.Mutex // guards accept, seen
	accept string
	seen   map[string]int
}

func newAuthProxy(t *testing.T, target string) *authProxy {
	t.Helper()
	u, err := url.Parse(target)
	if err != nil {
		t.Fatal(err)
	}
	p := &authProxy{seen: map[string]int{}}
	rp := &httputil.ReverseProxy{Rewrite: func(r *httputil.ProxyRequest) {
		r.SetURL(u)
		r.Out.Host = u.Host // the emulator takes other hosts for bucket names
	}}
	p.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		tok := strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer ")
		p.mu.Lock()
		p.seen[tok]++
		ok := tok == p.accept
		p.mu.Unlock()
		if !ok {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusUnauthorized)
			_, _ = w.Write([]byte(`{"error":{"code":401,"message":"Invalid Credentials"}}`))
			return
		}
		rp.ServeHTTP(w, r)
	}))
	t.Cleanup(p.srv.Close)
	return p
}

func (p *authProxy) acceptOnly(tok string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.accept = tok
}

func (p *authProxy) count(tok string) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.seen[tok]
}

// accountJSON is a service-account key file for email whose token
// endpoint is tokenURI.
func accountJSON(t *testing.T, email, tokenURI string) []byte {
	t.Helper()
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	der, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	b, err := json.Marshal(map[string]string{
		"type": "service_account", "client_email": email, "client_id": "1", "private_key_id": "k-" + email,
		"private_key": string(pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der})),
		"token_uri":   tokenURI, "project_id": "basin-test",
	})
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestUpdateCredentials opens a store with service account A through a
// proxy that accepts only A's token, then revokes A, switches the store
// to B and checks the next requests carry B's token and succeed.
func TestUpdateCredentials(t *testing.T) {
	emulator := newTestStore(t) // a bucket on the shared emulator
	tokens := tokenServer(t)
	proxy := newAuthProxy(t, sharedEndpoint(t))
	const emailA, emailB = "a@basin-test.iam.gserviceaccount.com", "b@basin-test.iam.gserviceaccount.com"
	credsA := objstore.Credentials{GCSCredentialsJSON: accountJSON(t, emailA, tokens.URL+"/token")}
	credsB := objstore.Credentials{GCSCredentialsJSON: accountJSON(t, emailB, tokens.URL+"/token")}
	put(t, emulator, "k", "value")

	cfg := testConfig(proxy.srv.URL, emulator.cfg.Bucket)
	cfg.MaxAttempts = 1
	s, err := New(t.Context(), cfg, credsA)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = s.Close() }()

	proxy.acceptOnly("token-for-" + emailA)
	if _, err := s.Stat(t.Context(), "k"); err != nil {
		t.Fatalf("Stat with A: %v", err)
	}
	proxy.acceptOnly("token-for-" + emailB) // A is revoked
	if _, err := s.Stat(t.Context(), "k"); !errors.Is(err, objstore.ErrAccessDenied) {
		t.Fatalf("Stat with revoked A = %v, want ErrAccessDenied", err)
	}
	if err := s.UpdateCredentials(t.Context(), credsB); err != nil {
		t.Fatalf("UpdateCredentials: %v", err)
	}
	for range 3 {
		if _, err := s.Stat(t.Context(), "k"); err != nil {
			t.Fatalf("Stat after switching to B: %v", err)
		}
	}
	if got, body, err := readAll(t, s, "k", objstore.ReadOptions{Length: -1}); err != nil || got != "value" {
		t.Fatalf("Read after switching to B = %q, %v, %v", got, body, err)
	}
	if n := proxy.count("token-for-" + emailB); n < 4 {
		t.Errorf("requests with B's token = %d, want at least 4", n)
	}
}

func TestUpdateCredentialsRefused(t *testing.T) {
	tokens := tokenServer(t)
	withJSON, err := New(t.Context(), testConfig("http://127.0.0.1:1", "b12"),
		objstore.Credentials{GCSCredentialsJSON: accountJSON(t, "a@x.iam.gserviceaccount.com", tokens.URL+"/token")})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = withJSON.Close() }()
	noJSON, err := New(t.Context(), testConfig("http://127.0.0.1:1", "b12"), objstore.Credentials{})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = noJSON.Close() }()
	cases := []struct {
		name  string
		store *Store
		creds objstore.Credentials
	}{
		{"store without credentials JSON", noJSON, objstore.Credentials{GCSCredentialsJSON: accountJSON(t, "b@x", tokens.URL)}},
		{"access keys", withJSON, objstore.Credentials{AccessKeyID: "AK", SecretAccessKey: secretMarker}},
		{"empty", withJSON, objstore.Credentials{}},
		{"not JSON", withJSON, objstore.Credentials{GCSCredentialsJSON: []byte("private_key=" + secretMarker)}},
		{"authorized user", withJSON, objstore.Credentials{GCSCredentialsJSON: []byte(`{"type":"authorized_user","refresh_token":"` + secretMarker + `"}`)}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			err := c.store.UpdateCredentials(t.Context(), c.creds)
			if !errors.Is(err, objstore.ErrInvalidConfig) {
				t.Fatalf("UpdateCredentials = %v, want ErrInvalidConfig", err)
			}
			if strings.Contains(err.Error(), secretMarker) {
				t.Errorf("error leaks the credentials: %v", err)
			}
		})
	}
}

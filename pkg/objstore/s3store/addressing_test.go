package s3store

import (
	"context"
	"errors"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/basin-csi/basin/pkg/objstore"
)

// recordingTransport answers every request itself and never dials: the
// requests an Amazon S3 configuration makes are checked without leaving
// the machine. A CreateSession gets session credentials; anything else a
// 404.
type recordingTransport struct {
	mu   sync.Mutex
	reqs []*http.Request
}

const sessionResult = `<?xml version="1.0" encoding="UTF-8"?>
<CreateSessionResult><Credentials><SessionToken>session-token</SessionToken><SecretAccessKey>session-secret</SecretAccessKey><AccessKeyId>session-key</AccessKeyId><Expiration>2099-01-01T00:00:00Z</Expiration></Credentials></CreateSessionResult>`

func (r *recordingTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	r.mu.Lock()
	r.reqs = append(r.reqs, req.Clone(context.Background()))
	r.mu.Unlock()
	if req.Body != nil {
		_ = req.Body.Close()
	}
	resp := &http.Response{StatusCode: http.StatusNotFound, Header: http.Header{}, Body: io.NopCloser(strings.NewReader("")), Request: req}
	if _, ok := req.URL.Query()["session"]; ok {
		resp.StatusCode = http.StatusOK
		resp.Header.Set("Content-Type", "application/xml")
		resp.Body = io.NopCloser(strings.NewReader(sessionResult))
	}
	return resp, nil
}

func (r *recordingTransport) requests() []*http.Request {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]*http.Request(nil), r.reqs...)
}

// recordedStore is New(cfg) whose HTTP client is a recordingTransport.
func recordedStore(t *testing.T, cfg objstore.Config) (*Store, *recordingTransport) {
	t.Helper()
	creds := objstore.Credentials{AccessKeyID: "AKIDTEST", SecretAccessKey: "test-secret"} // never the default chain: no metadata service
	st, err := New(context.Background(), cfg, creds)
	if err != nil {
		t.Fatal(err)
	}
	rec := &recordingTransport{}
	opts := st.c.s3.Options()
	opts.HTTPClient = &http.Client{Transport: rec}
	opts.ExpressCredentials = nil // rebuilt on the recording client
	st.c.s3 = s3.New(opts)
	st.fast = newFastGet(context.Background(), st.c.s3.Options(), cfg.Bucket)
	return st, rec
}

// TestAmazonS3Addressing checks the requests of a configuration without
// endpoint and path-style (a sharedCache of the form s3://bucket): a
// general purpose bucket is addressed virtual-hosted at its region's
// endpoint; a directory bucket of S3 Express One Zone at its zone's
// endpoint, after a CreateSession whose token signs the request.
func TestAmazonS3Addressing(t *testing.T) {
	cases := []struct {
		name, bucket, region string
		wantHosts            []string // in order
		session              bool
	}{
		{name: "general purpose", bucket: "tier-1", region: "eu-west-1", wantHosts: []string{"tier-1.s3.eu-west-1.amazonaws.com"}},
		{name: "S3 Express One Zone", bucket: "tier--usw2-az1--x-s3", region: "us-west-2", session: true,
			wantHosts: []string{"tier--usw2-az1--x-s3.s3express-usw2-az1.us-west-2.amazonaws.com", "tier--usw2-az1--x-s3.s3express-usw2-az1.us-west-2.amazonaws.com"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			st, rec := recordedStore(t, objstore.Config{Backend: objstore.BackendS3, Bucket: c.bucket, Region: c.region, MaxAttempts: 1})
			defer func() { _ = st.Close() }()
			if _, err := st.Stat(context.Background(), "team-a/block"); !errors.Is(err, objstore.ErrNotFound) {
				t.Fatalf("Stat = %v, want ErrNotFound from the recorded 404", err)
			}
			reqs := rec.requests()
			var hosts []string
			for _, r := range reqs {
				hosts = append(hosts, r.URL.Host)
				if r.URL.Scheme != "https" {
					t.Errorf("%s %s: scheme %q, want https", r.Method, r.URL, r.URL.Scheme)
				}
			}
			if strings.Join(hosts, " ") != strings.Join(c.wantHosts, " ") {
				t.Fatalf("hosts %q, want %q", hosts, c.wantHosts)
			}
			last := reqs[len(reqs)-1]
			if last.Method != http.MethodHead || last.URL.Path != "/team-a/block" {
				t.Errorf("object request %s %s, want HEAD /team-a/block (virtual-hosted: no bucket in the path)", last.Method, last.URL.Path)
			}
			gotToken := last.Header.Get("X-Amz-S3session-Token")
			if c.session {
				if first := reqs[0]; first.Method != http.MethodGet || !first.URL.Query().Has("session") {
					t.Errorf("first request %s %s, want CreateSession (GET /?session)", first.Method, first.URL)
				}
				if gotToken != "session-token" {
					t.Errorf("object request's session token %q, want the CreateSession's", gotToken)
				}
			} else if gotToken != "" {
				t.Errorf("a general purpose bucket's request carries a session token %q", gotToken)
			}
		})
	}
}

// TestFastGetAddressing checks the read path's GET (fastget.go) against
// the SDK's addressing: a general purpose bucket's GET goes, signed with
// SigV4 for s3 in the bucket's region, to the same virtual-hosted URL the
// SDK uses, asks for no gzip and carries the range and If-Match; a
// directory bucket keeps the SDK's GetObject (its session auth).
func TestFastGetAddressing(t *testing.T) {
	st, rec := recordedStore(t, objstore.Config{Backend: objstore.BackendS3, Bucket: "tier-1", Region: "eu-west-1", MaxAttempts: 1})
	defer func() { _ = st.Close() }()
	if st.fast == nil {
		t.Fatal("no fast GET for a general purpose bucket")
	}
	_, _, err := st.Read(context.Background(), "team a/block+1", objstore.ReadOptions{Offset: 10, Length: 5, IfVersion: "abc"})
	if !errors.Is(err, objstore.ErrNotFound) {
		t.Fatalf("Read = %v, want ErrNotFound from the recorded 404", err)
	}
	reqs := rec.requests()
	if len(reqs) != 1 {
		t.Fatalf("%d requests, want 1", len(reqs))
	}
	r := reqs[0]
	if r.Method != http.MethodGet || r.URL.Host != "tier-1.s3.eu-west-1.amazonaws.com" || r.URL.Scheme != "https" {
		t.Errorf("request %s %s, want GET https://tier-1.s3.eu-west-1.amazonaws.com/...", r.Method, r.URL)
	}
	if got, want := r.URL.EscapedPath(), "/team%20a/block%2B1"; got != want {
		t.Errorf("path %q, want %q", got, want)
	}
	for h, want := range map[string]string{
		"Range": "bytes=10-14", "If-Match": `"abc"`, "Accept-Encoding": "identity",
		"X-Amz-Content-Sha256": emptyPayloadHash,
	} {
		if got := r.Header.Get(h); got != want {
			t.Errorf("header %s = %q, want %q", h, got, want)
		}
	}
	if auth := r.Header.Get("Authorization"); !strings.HasPrefix(auth, "AWS4-HMAC-SHA256 Credential=AKIDTEST/") || !strings.Contains(auth, "/eu-west-1/s3/aws4_request") {
		t.Errorf("Authorization %q, want SigV4 for s3 in eu-west-1", auth)
	}

	express, _ := recordedStore(t, objstore.Config{Backend: objstore.BackendS3, Bucket: "tier--usw2-az1--x-s3", Region: "us-west-2", MaxAttempts: 1})
	defer func() { _ = express.Close() }()
	if express.fast != nil {
		t.Error("a directory bucket got the fast GET; it needs the SDK's session auth")
	}
}

package s3store

import (
	"crypto/md5"
	"encoding/base64"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/basin-csi/basin/pkg/objstore"
)

// Faults a real server cannot be made to show on demand (throttling, hung
// responses, stalled bodies, ignored ranges) come from a hand-written HTTP
// server speaking just enough S3.

// fakeStore returns a Store whose endpoint is handler, with short timeouts.
func fakeStore(t *testing.T, handler http.HandlerFunc, tune func(*objstore.Config)) *Store {
	t.Helper()
	srv := httptest.NewServer(handler)
	t.Cleanup(srv.Close)
	cfg := objstore.Config{
		Backend: objstore.BackendS3, Bucket: "bucket", Endpoint: srv.URL, Region: "us-east-1",
		PathStyle: true, RequestTimeout: 500 * time.Millisecond, MaxAttempts: 3,
	}
	if tune != nil {
		tune(&cfg)
	}
	s, err := New(t.Context(), cfg, objstore.Credentials{AccessKeyID: "id", SecretAccessKey: "secret"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

// s3Error writes an S3 XML error response.
func s3Error(w http.ResponseWriter, status int, code string) {
	w.Header().Set("Content-Type", "application/xml")
	w.WriteHeader(status)
	_, _ = io.WriteString(w, `<?xml version="1.0" encoding="UTF-8"?><Error><Code>`+code+`</Code><Message>fake</Message></Error>`)
}

// TestRetriedErrors: throttling and server errors are retried MaxAttempts
// times by the SDK's standard retryer, then classified; client errors are
// not retried.
func TestRetriedErrors(t *testing.T) {
	cases := []struct {
		name     string
		status   int
		code     string
		want     error
		attempts int64
	}{
		{"SlowDown", http.StatusServiceUnavailable, "SlowDown", objstore.ErrThrottled, 3},
		{"InternalError", http.StatusInternalServerError, "InternalError", objstore.ErrUnavailable, 3},
		{"ClientDisconnected", statusClientClosed, "ClientDisconnected", objstore.ErrUnavailable, 3}, // MinIO shutting down
		{"AccessDenied", http.StatusForbidden, "AccessDenied", objstore.ErrAccessDenied, 1},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var attempts atomic.Int64
			s := fakeStore(t, func(w http.ResponseWriter, r *http.Request) {
				attempts.Add(1)
				s3Error(w, c.status, c.code)
			}, func(cfg *objstore.Config) { cfg.RequestTimeout = 30 * time.Second })
			_, err := s.List(t.Context(), objstore.ListOptions{})
			if !errors.Is(err, c.want) {
				t.Errorf("List: %v, want %v", err, c.want)
			}
			if got := attempts.Load(); got != c.attempts {
				t.Errorf("%d attempts, want %d", got, c.attempts)
			}
			if objstore.IsRetryable(err) != (c.want != objstore.ErrAccessDenied) {
				t.Errorf("IsRetryable(%v) = %v", err, objstore.IsRetryable(err))
			}
		})
	}
}

// TestHungResponse: a server that never answers fails each call with
// ErrUnavailable after about RequestTimeout instead of blocking.
func TestHungResponse(t *testing.T) {
	s := fakeStore(t, func(w http.ResponseWriter, r *http.Request) {
		<-r.Context().Done()
	}, nil)
	start := time.Now()
	_, err := s.Stat(t.Context(), "key")
	if !errors.Is(err, objstore.ErrUnavailable) {
		t.Errorf("Stat: %v, want ErrUnavailable", err)
	}
	_, _, err = s.Read(t.Context(), "key", objstore.ReadOptions{Length: -1})
	if !errors.Is(err, objstore.ErrUnavailable) {
		t.Errorf("Read: %v, want ErrUnavailable", err)
	}
	// A liveness bound (two calls of 500 ms each), not a speed goal.
	if d := time.Since(start); d > 20*time.Second {
		t.Errorf("hung calls took %v", d)
	}
}

// TestStalledBody: headers and some bytes arrive, then nothing; the body
// read fails with ErrUnavailable (objstore.NewStallReader).
func TestStalledBody(t *testing.T) {
	s := fakeStore(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Length", strconv.Itoa(1<<20))
		w.Header().Set("ETag", `"v1"`)
		w.WriteHeader(http.StatusOK)
		_, _ = w.Write(make([]byte, 1024))
		w.(http.Flusher).Flush()
		<-r.Context().Done()
	}, nil)
	rc, info, err := s.Read(t.Context(), "key", objstore.ReadOptions{Length: -1})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = rc.Close() }()
	if info.Size != 1<<20 || info.Version != "v1" {
		t.Errorf("info = %+v", info)
	}
	n, err := io.Copy(io.Discard, rc)
	if n != 1024 || !errors.Is(err, objstore.ErrUnavailable) {
		t.Errorf("read %d bytes, then %v; want 1024 and ErrUnavailable", n, err)
	}
}

// TestIgnoredRange: a store that answers a ranged GET with the whole object
// (200, no Content-Range) still yields just the range.
func TestIgnoredRange(t *testing.T) {
	const body = "0123456789abcdefghij"
	s := fakeStore(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Length", strconv.Itoa(len(body)))
		w.Header().Set("ETag", `"v7"`)
		_, _ = io.WriteString(w, body)
	}, nil)
	cases := []struct {
		off, n int64
		want   string
	}{
		{10, 5, "abcde"}, {15, -1, "fghij"}, {18, 10, "ij"}, {20, -1, ""},
	}
	for _, c := range cases {
		data, info, err := readAll(t, s, "key", objstore.ReadOptions{Offset: c.off, Length: c.n})
		if err != nil || string(data) != c.want || info.Size != int64(len(body)) || info.Version != "v7" {
			t.Errorf("Read(%d, %d) = %q, %+v, %v; want %q", c.off, c.n, data, info, err, c.want)
		}
	}
	_, _, err := readAll(t, s, "key", objstore.ReadOptions{Offset: 21, Length: -1})
	if !errors.Is(err, objstore.ErrInvalidRange) {
		t.Errorf("Read past the end: %v, want ErrInvalidRange", err)
	}
}

func readAll(t *testing.T, s objstore.Store, key string, opts objstore.ReadOptions) ([]byte, objstore.ObjectInfo, error) {
	t.Helper()
	rc, info, err := s.Read(t.Context(), key, opts)
	if err != nil {
		return nil, info, err
	}
	defer func() { _ = rc.Close() }()
	data, err := io.ReadAll(rc)
	return data, info, err
}

// TestDeleteObjectsContentMD5: outside AWS, DeleteObjects carries a correct
// Content-MD5, which stores following the older S3 rule require.
func TestDeleteObjectsContentMD5(t *testing.T) {
	var gotMD5, wantMD5 atomic.Value
	s := fakeStore(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/xml")
		if _, ok := r.URL.Query()["delete"]; ok && r.Method == http.MethodPost {
			body, _ := io.ReadAll(r.Body)
			sum := md5.Sum(body)
			wantMD5.Store(base64.StdEncoding.EncodeToString(sum[:]))
			gotMD5.Store(r.Header.Get("Content-Md5"))
			_, _ = io.WriteString(w, `<?xml version="1.0" encoding="UTF-8"?><DeleteResult></DeleteResult>`)
			return
		}
		_, _ = io.WriteString(w, `<?xml version="1.0" encoding="UTF-8"?><ListBucketResult><Name>bucket</Name>`+
			`<IsTruncated>false</IsTruncated><Contents><Key>a</Key><Size>1</Size><ETag>"x"</ETag></Contents>`+
			`<Contents><Key>b</Key><Size>1</Size><ETag>"y"</ETag></Contents></ListBucketResult>`)
	}, nil)
	n, err := s.DeletePrefix(t.Context(), "")
	if err != nil || n != 2 {
		t.Fatalf("DeletePrefix = %d, %v; want 2", n, err)
	}
	if got, want := gotMD5.Load(), wantMD5.Load(); got == nil || got != want {
		t.Errorf("Content-Md5 %v, want %v", got, want)
	}
}

package gcsstore

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/basin-csi/basin/pkg/objstore"
)

// scriptedGCS is a hand-written stand-in for GCS that answers object
// metadata (JSON API), downloads (XML API) and uploads with scripted
// statuses, to test what fake-gcs-server cannot do: fail on purpose.
type scriptedGCS struct {
	// constant
	srv *httptest.Server
	// release unblocks handlers that hang; closed at cleanup.
	release chan struct{}

	mu sync.Mutex // guards statuses
	// statuses are answered in turn per request kind ("meta", "read",
	// "upload"); the last one repeats. Zero means success.
	statuses map[string][]int

	requests sync.Map // kind -> *atomic.Int64
}

const scriptedBody = "hello, scripted world"

func newScriptedGCS(t *testing.T) *scriptedGCS {
	t.Helper()
	g := &scriptedGCS{release: make(chan struct{}), statuses: map[string][]int{}}
	g.srv = httptest.NewServer(http.HandlerFunc(g.serve))
	t.Cleanup(func() {
		close(g.release)
		g.srv.CloseClientConnections()
		g.srv.Close()
	})
	return g
}

// script sets the statuses answered to kind.
func (g *scriptedGCS) script(kind string, statuses ...int) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.statuses[kind] = statuses
}

func (g *scriptedGCS) count(kind string) int64 {
	v, _ := g.requests.LoadOrStore(kind, new(atomic.Int64))
	return v.(*atomic.Int64).Load()
}

// next records a request of kind and returns its scripted status.
func (g *scriptedGCS) next(kind string) int {
	v, _ := g.requests.LoadOrStore(kind, new(atomic.Int64))
	n := v.(*atomic.Int64).Add(1)
	g.mu.Lock()
	defer g.mu.Unlock()
	s := g.statuses[kind]
	if len(s) == 0 {
		return 0
	}
	return s[min(int(n)-1, len(s)-1)]
}

// Special statuses.
const (
	hangBeforeHeaders = -1 // never answer
	stallAfterBytes   = -2 // send headers and 5 bytes, then hang
)

func (g *scriptedGCS) serve(w http.ResponseWriter, r *http.Request) {
	var kind string
	switch {
	case strings.HasPrefix(r.URL.Path, "/upload/"):
		kind = "upload"
		_, _ = io.Copy(io.Discard, r.Body)
	case strings.HasPrefix(r.URL.Path, "/storage/v1/"):
		kind = "meta"
	default:
		kind = "read"
	}
	switch status := g.next(kind); status {
	case 0:
	case hangBeforeHeaders:
		<-g.release
		return
	case stallAfterBytes:
		w.Header().Set("Content-Length", fmt.Sprint(len(scriptedBody)))
		w.Header().Set("X-Goog-Generation", "7")
		w.WriteHeader(http.StatusOK)
		_, _ = io.WriteString(w, scriptedBody[:5])
		w.(http.Flusher).Flush()
		<-g.release
		return
	default:
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		_, _ = fmt.Fprintf(w, `{"error":{"code":%d,"message":"scripted"}}`, status)
		return
	}
	switch kind {
	case "meta", "upload":
		w.Header().Set("Content-Type", "application/json")
		_, _ = fmt.Fprintf(w, `{"bucket":"b","name":"k","size":"%d","generation":"7","updated":"2026-01-02T03:04:05.678Z"}`, len(scriptedBody))
	case "read":
		w.Header().Set("X-Goog-Generation", "7")
		w.Header().Set("Last-Modified", "Fri, 02 Jan 2026 03:04:05 GMT")
		_, _ = io.WriteString(w, scriptedBody)
	}
}

// store returns a Store on g with the given attempts and timeout.
func (g *scriptedGCS) store(t *testing.T, attempts int, timeout time.Duration) *Store {
	t.Helper()
	cfg := objstore.Config{Backend: objstore.BackendGCS, Bucket: "b", Endpoint: g.srv.URL,
		MaxAttempts: attempts, RequestTimeout: timeout}
	s, err := New(t.Context(), cfg, objstore.Credentials{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

func TestRetries(t *testing.T) {
	cases := []struct {
		name     string
		statuses []int
		attempts int
		want     error // nil: success
		requests int64
	}{
		{"transient 503 then success", []int{503, 503, 0}, 3, nil, 3},
		{"503 until attempts run out", []int{503}, 2, objstore.ErrUnavailable, 2},
		{"500 is retried", []int{500, 0}, 2, nil, 2},
		{"429 until attempts run out", []int{429}, 3, objstore.ErrThrottled, 3},
		{"403 is not retried", []int{403}, 5, objstore.ErrAccessDenied, 1},
		{"404 is not retried", []int{404}, 5, objstore.ErrNotFound, 1},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			g := newScriptedGCS(t)
			g.script("meta", c.statuses...)
			s := g.store(t, c.attempts, 10*time.Second)
			info, err := s.Stat(t.Context(), "k")
			switch {
			case c.want == nil && err != nil:
				t.Fatalf("Stat: %v", err)
			case c.want == nil && (info.Version != "7" || info.Size != int64(len(scriptedBody))):
				t.Errorf("Stat = %+v, want version 7", info)
			case c.want != nil && !errors.Is(err, c.want):
				t.Errorf("Stat = %v, want %v", err, c.want)
			}
			if got := g.count("meta"); got != c.requests {
				t.Errorf("%d requests, want %d", got, c.requests)
			}
		})
	}
}

// TestUploadRetriesBounded: the SDK retries uploads until the context ends;
// Put must stop after MaxAttempts like every other call.
func TestUploadRetriesBounded(t *testing.T) {
	for _, c := range []struct {
		name string
		size int64
		body int
	}{
		{"single request", 3, 3},
		{"resumable", -1, 3 << 20},
	} {
		t.Run(c.name, func(t *testing.T) {
			g := newScriptedGCS(t)
			g.script("upload", 503)
			s := g.store(t, 3, 10*time.Second)
			_, err := s.Put(t.Context(), "k", bytes.NewReader(make([]byte, c.body)), objstore.PutOptions{Size: c.size})
			if !errors.Is(err, objstore.ErrUnavailable) {
				t.Errorf("Put = %v, want ErrUnavailable", err)
			}
			if got := g.count("upload"); got != 3 {
				t.Errorf("%d upload requests, want 3", got)
			}
		})
	}
}

func TestReadTimeouts(t *testing.T) {
	t.Run("no headers within RequestTimeout", func(t *testing.T) {
		g := newScriptedGCS(t)
		g.script("read", hangBeforeHeaders)
		s := g.store(t, 1, 300*time.Millisecond)
		_, _, err := s.Read(t.Context(), "k", objstore.ReadOptions{Length: -1})
		if !errors.Is(err, objstore.ErrUnavailable) {
			t.Errorf("Read = %v, want ErrUnavailable", err)
		}
	})
	t.Run("body stalls", func(t *testing.T) {
		g := newScriptedGCS(t)
		g.script("read", stallAfterBytes)
		s := g.store(t, 1, 300*time.Millisecond)
		rc, info, err := s.Read(t.Context(), "k", objstore.ReadOptions{Length: -1})
		if err != nil {
			t.Fatalf("Read: %v", err)
		}
		defer func() { _ = rc.Close() }()
		if info.Version != "7" {
			t.Errorf("info = %+v", info)
		}
		got, err := io.ReadAll(rc)
		if !errors.Is(err, objstore.ErrUnavailable) {
			t.Errorf("reading a stalled body = %q, %v; want ErrUnavailable", got, err)
		}
		if string(got) != scriptedBody[:5] {
			t.Errorf("read %q before the stall, want %q", got, scriptedBody[:5])
		}
	})
	t.Run("succeeds in time", func(t *testing.T) {
		g := newScriptedGCS(t)
		s := g.store(t, 1, 5*time.Second)
		rc, info, err := s.Read(t.Context(), "k", objstore.ReadOptions{Length: -1})
		if err != nil {
			t.Fatalf("Read: %v", err)
		}
		defer func() { _ = rc.Close() }()
		got, err := io.ReadAll(rc)
		if err != nil || string(got) != scriptedBody || info.Version != "7" || info.Size != int64(len(scriptedBody)) {
			t.Errorf("Read = %q, %+v, %v", got, info, err)
		}
	})
}

// TestServerDown: nothing listens at the endpoint.
func TestServerDown(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	endpoint := "http://" + l.Addr().String()
	_ = l.Close()
	cfg := objstore.Config{Backend: objstore.BackendGCS, Bucket: "b", Endpoint: endpoint,
		MaxAttempts: 2, RequestTimeout: 5 * time.Second}
	s, err := New(t.Context(), cfg, objstore.Credentials{})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = s.Close() }()
	_, err = s.Stat(t.Context(), "k")
	if !errors.Is(err, objstore.ErrUnavailable) || !objstore.IsRetryable(err) {
		t.Errorf("Stat = %v, want retryable ErrUnavailable", err)
	}
	_, _, err = s.Read(t.Context(), "k", objstore.ReadOptions{Length: -1})
	if !errors.Is(err, objstore.ErrUnavailable) {
		t.Errorf("Read = %v, want ErrUnavailable", err)
	}
	_, err = s.List(t.Context(), objstore.ListOptions{})
	if !errors.Is(err, objstore.ErrUnavailable) {
		t.Errorf("List = %v, want ErrUnavailable", err)
	}
}

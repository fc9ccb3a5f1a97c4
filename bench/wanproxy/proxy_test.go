package wanproxy

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// upstream is a tiny object server: GET /b/k?size=N returns N bytes, PUT
// discards the body and answers its length; it records the Host it saw.
type upstream struct {
	mu    sync.Mutex // guards hosts
	hosts []string
}

func (u *upstream) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	u.mu.Lock()
	u.hosts = append(u.hosts, r.Host)
	u.mu.Unlock()
	switch r.Method {
	case http.MethodGet:
		n, _ := strconv.Atoi(r.URL.Query().Get("size"))
		w.Header().Set("Content-Length", strconv.Itoa(n))
		_, _ = w.Write(bytes.Repeat([]byte{'x'}, n))
	case http.MethodPut:
		n, _ := io.Copy(io.Discard, r.Body)
		_, _ = fmt.Fprint(w, n)
	case http.MethodPost:
		// An upload session on the upstream itself, as fake-gcs-server
		// answers a resumable-upload start.
		w.Header().Set("Location", "http://"+r.Host+"/upload/session?id=1")
		w.WriteHeader(http.StatusOK)
	default:
		w.WriteHeader(http.StatusOK)
	}
}

func startPair(t testing.TB, cfg Config) (*Proxy, *upstream) {
	t.Helper()
	up := &upstream{}
	srv := httptest.NewServer(up)
	t.Cleanup(srv.Close)
	cfg.Upstream = srv.URL
	p, err := Start(cfg, "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := p.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	return p, up
}

// newClient returns a client with its own connection pool, so that tests
// control how many TCP connections are used.
func newClient() *http.Client {
	return &http.Client{Transport: &http.Transport{Proxy: nil, DisableCompression: true}}
}

func get(t *testing.T, c *http.Client, url string) int64 {
	t.Helper()
	resp, err := c.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = resp.Body.Close() }()
	n, err := io.Copy(io.Discard, resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// eventually polls cond: counters are bumped just after the bytes leave,
// so the client may see them a moment before the proxy has counted them.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: condition not met within 5s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// minDuration is the least time n bytes can take through a token bucket of
// rate bps whose burst (5 ms of tokens, at least one chunk) starts full.
func minDuration(n, bps int64) time.Duration {
	burst := max(int64(DefaultChunk), bps/200)
	return time.Duration(float64(n-burst) / float64(bps) * float64(time.Second))
}

func TestTTFB(t *testing.T) {
	p, _ := startPair(t, Config{TTFB: 30 * time.Millisecond})
	c := newClient()
	for i := range 3 {
		start := time.Now()
		resp, err := c.Head(p.URL() + "/bkt/key")
		if err != nil {
			t.Fatal(err)
		}
		_ = resp.Body.Close()
		if d := time.Since(start); d < 30*time.Millisecond {
			t.Errorf("request %d answered after %v, want >= 30ms", i, d)
		}
	}
}

func TestConnBandwidthDownload(t *testing.T) {
	const bps, size = 20_000_000, 4 << 20
	p, _ := startPair(t, Config{ConnBandwidth: bps})
	start := time.Now()
	if n := get(t, newClient(), p.URL()+"/bkt/key?size="+strconv.Itoa(size)); n != size {
		t.Fatalf("got %d bytes, want %d", n, size)
	}
	if d, want := time.Since(start), minDuration(size, bps); d < want {
		t.Errorf("%d bytes at %d B/s took %v, want >= %v", size, bps, d, want)
	}
}

func TestConnBandwidthUpload(t *testing.T) {
	const bps, size = 20_000_000, 3 << 20
	p, _ := startPair(t, Config{ConnBandwidth: bps})
	req, err := http.NewRequest(http.MethodPut, p.URL()+"/bkt/key", bytes.NewReader(make([]byte, size)))
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	resp, err := newClient().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	_ = resp.Body.Close()
	if string(body) != strconv.Itoa(size) {
		t.Fatalf("upstream saw %q bytes, want %d", body, size)
	}
	if d, want := time.Since(start), minDuration(size, bps); d < want {
		t.Errorf("upload of %d bytes at %d B/s took %v, want >= %v", size, bps, d, want)
	}
}

// TestTotalBandwidth has no per-connection limit: any slowdown of four
// parallel connections comes from the shared bucket.
func TestTotalBandwidth(t *testing.T) {
	const bps, each, conns = 20_000_000, 1 << 20, 4
	p, _ := startPair(t, Config{TotalBandwidth: bps})
	start := time.Now()
	var wg sync.WaitGroup
	errs := make(chan error, conns)
	for range conns {
		wg.Go(func() {
			resp, err := newClient().Get(p.URL() + "/bkt/k?size=" + strconv.Itoa(each))
			if err != nil {
				errs <- err
				return
			}
			defer func() { _ = resp.Body.Close() }()
			if n, err := io.Copy(io.Discard, resp.Body); err != nil || n != each {
				errs <- fmt.Errorf("read %d bytes: %v", n, err)
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	if d, want := time.Since(start), minDuration(each*conns, bps); d < want {
		t.Errorf("%d x %d bytes at %d B/s total took %v, want >= %v", conns, each, bps, d, want)
	}
}

func TestCountsAndHost(t *testing.T) {
	p, up := startPair(t, Config{})
	c := newClient()
	base := p.URL()

	get(t, c, base+"/bkt/a?size=1000000")
	get(t, c, base+"/bkt/b?size=12345")
	get(t, c, base+"/bkt?list-type=2&size=7")
	resp, err := c.Head(base + "/bkt/a")
	if err != nil {
		t.Fatal(err)
	}
	_ = resp.Body.Close()
	req, _ := http.NewRequest(http.MethodPut, base+"/bkt/c", strings.NewReader(strings.Repeat("y", 4321)))
	resp, err = c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	_ = resp.Body.Close()
	req, _ = http.NewRequest(http.MethodDelete, base+"/bkt/c", nil)
	resp, err = c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	_ = resp.Body.Close()

	want := Snapshot{
		KindGet:   {Requests: 2, BytesOut: 1_012_345},
		KindList:  {Requests: 1, BytesOut: 7},
		KindHead:  {Requests: 1},
		KindPut:   {Requests: 1, BytesIn: 4321, BytesOut: 4},
		KindOther: {Requests: 1},
	}
	eventually(t, "counters", func() bool {
		s := p.Stats()
		for _, k := range Kinds {
			if s[k] != want[k] {
				return false
			}
		}
		return true
	})

	up.mu.Lock()
	defer up.mu.Unlock()
	for _, h := range up.hosts {
		if h != p.Addr() {
			t.Errorf("upstream saw Host %q, want the proxy's %q", h, p.Addr())
		}
	}
}

func TestAdminHandler(t *testing.T) {
	p, _ := startPair(t, Config{})
	get(t, newClient(), p.URL()+"/bkt/a?size=99")
	eventually(t, "count", func() bool { return p.Stats()[KindGet].BytesOut == 99 })

	rec := httptest.NewRecorder()
	p.AdminHandler().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/stats", nil))
	if rec.Code != http.StatusOK {
		t.Fatalf("GET /stats: %d", rec.Code)
	}
	var got Snapshot
	if err := json.Unmarshal(rec.Body.Bytes(), &got); err != nil {
		t.Fatal(err)
	}
	if got[KindGet] != (Counter{Requests: 1, BytesOut: 99}) {
		t.Errorf("stats GET = %+v", got[KindGet])
	}
}

func TestShapingOff(t *testing.T) {
	p, _ := startPair(t, Config{TTFB: time.Hour, ConnBandwidth: 1})
	p.SetShaping(false)
	if n := get(t, newClient(), p.URL()+"/bkt/a?size=100000"); n != 100000 {
		t.Fatalf("got %d bytes", n)
	}
	eventually(t, "count", func() bool { return p.Stats()[KindGet].BytesOut == 100000 })
}

func TestConfigValidate(t *testing.T) {
	tests := []struct {
		name string
		cfg  Config
		ok   bool
	}{
		{"defaults", DefaultConfig("http://127.0.0.1:9000"), true},
		{"no scheme", Config{Upstream: "127.0.0.1:9000"}, false},
		{"ftp", Config{Upstream: "ftp://h"}, false},
		{"negative ttfb", Config{Upstream: "http://h", TTFB: -1}, false},
		{"negative bandwidth", Config{Upstream: "http://h", TotalBandwidth: -5}, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := tc.cfg.validate()
			if tc.ok && err != nil {
				t.Fatalf("unexpected error %v", err)
			}
			if !tc.ok && !errors.Is(err, ErrInvalidConfig) {
				t.Fatalf("err = %v, want ErrInvalidConfig", err)
			}
		})
	}
}

func TestRewriteHost(t *testing.T) {
	tests := []struct {
		rewrite      bool
		wantLocation func(p *Proxy) string
	}{
		{true, func(p *Proxy) string { return p.URL() + "/upload/session?id=1" }},
		{false, func(p *Proxy) string { return p.URL() + "/upload/session?id=1" }}, // Host passed through
	}
	for _, tc := range tests {
		t.Run(fmt.Sprint("rewrite=", tc.rewrite), func(t *testing.T) {
			p, up := startPair(t, Config{RewriteHost: tc.rewrite})
			resp, err := newClient().Post(p.URL()+"/upload/storage/v1/b/bkt/o?uploadType=resumable", "text/plain", strings.NewReader("x"))
			if err != nil {
				t.Fatal(err)
			}
			_ = resp.Body.Close()
			if got := resp.Header.Get("Location"); got != tc.wantLocation(p) {
				t.Errorf("Location = %q, want %q", got, tc.wantLocation(p))
			}
			up.mu.Lock()
			defer up.mu.Unlock()
			want := p.Addr()
			if tc.rewrite {
				want = strings.TrimPrefix(p.Config().Upstream, "http://")
			}
			if len(up.hosts) != 1 || up.hosts[0] != want {
				t.Fatalf("upstream saw Host %v, want %q", up.hosts, want)
			}
		})
	}
}

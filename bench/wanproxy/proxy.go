package wanproxy

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"sync"
	"sync/atomic"
	"time"
)

// Proxy is one shaped reverse proxy in front of one upstream server.
type Proxy struct {
	// constant
	cfg    Config
	shaper *shaper
	stats  *stats
	rp     *httputil.ReverseProxy
	srv    *http.Server
	ln     net.Listener
	done   chan struct{} // closed when Serve returns

	serveErr atomic.Value // error from Serve, if any
}

// Start listens on addr (host:port; port 0 picks a free one) and serves
// the proxy in the background until Close.
func Start(cfg Config, addr string) (*Proxy, error) {
	p, err := newProxy(cfg)
	if err != nil {
		return nil, err
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("wanproxy: listen %s: %w", addr, err)
	}
	p.ln = shapedListener{Listener: ln, s: p.shaper}
	go func() {
		defer close(p.done)
		if err := p.srv.Serve(p.ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			p.serveErr.Store(err)
		}
	}()
	return p, nil
}

func newProxy(cfg Config) (*Proxy, error) {
	up, err := cfg.validate()
	if err != nil {
		return nil, err
	}
	p := &Proxy{cfg: cfg, shaper: newShaper(cfg), stats: newStats(), done: make(chan struct{})}
	p.rp = &httputil.ReverseProxy{
		Rewrite: func(pr *httputil.ProxyRequest) {
			pr.SetURL(up)
			if !cfg.RewriteHost {
				pr.Out.Host = pr.In.Host // S3 signatures cover Host
			}
		},
		Transport: &http.Transport{
			Proxy:               nil,
			DialContext:         (&net.Dialer{Timeout: 5 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
			MaxIdleConns:        1024,
			MaxIdleConnsPerHost: 1024,
			IdleConnTimeout:     90 * time.Second,
			DisableCompression:  true,
		},
		ModifyResponse: func(resp *http.Response) error {
			if cfg.RewriteHost {
				p.rewriteLocation(resp, up.Host)
			}
			return nil
		},
		FlushInterval: -1,
		BufferPool:    newBufferPool(cfg.chunk()),
		ErrorLog:      log.New(io.Discard, "", 0),
	}
	p.srv = &http.Server{Handler: p, ReadHeaderTimeout: time.Minute}
	return p, nil
}

// rewriteLocation points a Location header that names the upstream (a
// resumable-upload session, a redirect) back at the proxy, so that the
// follow-up requests are shaped and counted too.
func (p *Proxy) rewriteLocation(resp *http.Response, upstreamHost string) {
	loc := resp.Header.Get("Location")
	if loc == "" {
		return
	}
	u, err := url.Parse(loc)
	if err != nil || u.Host != upstreamHost {
		return
	}
	u.Host = p.Addr()
	resp.Header.Set("Location", u.String())
}

// URL is the proxy's base URL, e.g. http://127.0.0.1:41234.
func (p *Proxy) URL() string { return "http://" + p.Addr() }

// Addr is the proxy's listening host:port.
func (p *Proxy) Addr() string { return p.ln.Addr().String() }

// Config returns the shaping in effect.
func (p *Proxy) Config() Config { return p.cfg }

// SetShaping turns delays and bandwidth limits on or off (counting goes on),
// e.g. off while a data set is uploaded through the proxy.
func (p *Proxy) SetShaping(on bool) { p.shaper.enabled.Store(on) }

// Stats returns the cumulative traffic since Start.
func (p *Proxy) Stats() Snapshot { return p.stats.snapshot() }

// Close stops accepting, closes every connection and waits for Serve.
func (p *Proxy) Close() error {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	if err := p.srv.Shutdown(ctx); err != nil {
		_ = p.srv.Close()
	}
	<-p.done
	if err, ok := p.serveErr.Load().(error); ok {
		return err
	}
	return nil
}

// ServeHTTP counts, delays and forwards one request.
func (p *Proxy) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	c := p.stats.counter(Classify(r))
	c.requests.Add(1)
	if r.Body != nil && r.Body != http.NoBody {
		r.Body = &countingBody{ReadCloser: r.Body, n: &c.bytesIn}
	}
	if p.cfg.TTFB > 0 && p.shaper.enabled.Load() {
		t := time.NewTimer(p.cfg.TTFB)
		select {
		case <-t.C:
		case <-r.Context().Done():
			t.Stop()
			return
		}
	}
	p.rp.ServeHTTP(&countingWriter{ResponseWriter: w, n: &c.bytesOut}, r)
}

// bufferPool lends the copy buffers of the reverse proxy: one chunk each,
// so that a body crosses the proxy in as few writes as the shaping allows.
type bufferPool struct{ p sync.Pool }

func newBufferPool(size int) *bufferPool {
	return &bufferPool{p: sync.Pool{New: func() any { return make([]byte, size) }}}
}

func (b *bufferPool) Get() []byte { return b.p.Get().([]byte) }

// Put boxes the slice header (an allocation): httputil.BufferPool's
// signature leaves no way to pool a pointer.
func (b *bufferPool) Put(p []byte) { b.p.Put(p) } //nolint:staticcheck // SA6002: see above

// countingBody counts request body bytes as the upstream reads them.
type countingBody struct {
	io.ReadCloser
	n *atomic.Int64
}

func (b *countingBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	b.n.Add(int64(n))
	return n, err
}

// countingWriter counts response body bytes. Unwrap lets
// http.ResponseController reach Flush on the real writer.
type countingWriter struct {
	http.ResponseWriter
	n *atomic.Int64
}

func (w *countingWriter) Write(p []byte) (int, error) {
	n, err := w.ResponseWriter.Write(p)
	w.n.Add(int64(n))
	return n, err
}

func (w *countingWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

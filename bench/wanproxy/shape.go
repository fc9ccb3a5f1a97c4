package wanproxy

import (
	"context"
	"net"
	"sync/atomic"

	"golang.org/x/time/rate"
)

// shaper holds the limits shared by every connection of one proxy.
type shaper struct {
	// constant
	chunk    int
	connRate int64
	down, up *rate.Limiter // aggregate per direction; nil = unlimited

	enabled atomic.Bool
}

func newShaper(cfg Config) *shaper {
	s := &shaper{chunk: cfg.chunk(), connRate: cfg.ConnBandwidth}
	s.down = newLimiter(cfg.TotalBandwidth, s.chunk)
	s.up = newLimiter(cfg.TotalBandwidth, s.chunk)
	s.enabled.Store(true)
	return s
}

// newLimiter returns a token bucket of bps bytes/s, or nil for unlimited.
// The burst is 5 ms worth of bytes and at least one chunk, so that timer
// oversleep does not lower the rate and no single wait exceeds the burst.
func newLimiter(bps int64, chunk int) *rate.Limiter {
	if bps <= 0 {
		return nil
	}
	burst := max(int64(chunk), bps/200)
	return rate.NewLimiter(rate.Limit(bps), int(burst))
}

// shapedListener wraps every accepted connection in a shapedConn.
type shapedListener struct {
	net.Listener
	s *shaper
}

func (l shapedListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(context.Background())
	return &shapedConn{
		Conn:   c,
		s:      l.s,
		down:   newLimiter(l.s.connRate, l.s.chunk),
		up:     newLimiter(l.s.connRate, l.s.chunk),
		ctx:    ctx,
		cancel: cancel,
	}, nil
}

// shapedConn charges every byte to its own limiters and the shared ones.
// Writes are downloads (server to client), reads are uploads.
type shapedConn struct {
	net.Conn
	// constant
	s        *shaper
	down, up *rate.Limiter
	ctx      context.Context // cancelled by Close so no wait outlives the conn
	cancel   context.CancelFunc
}

func (c *shapedConn) Write(p []byte) (int, error) {
	written := 0
	for len(p) > 0 {
		n := min(len(p), c.s.chunk)
		if err := c.wait(c.down, c.s.down, n); err != nil {
			return written, err
		}
		m, err := c.Conn.Write(p[:n])
		written += m
		if err != nil {
			return written, err
		}
		p = p[n:]
	}
	return written, nil
}

func (c *shapedConn) Read(p []byte) (int, error) {
	if len(p) > c.s.chunk {
		p = p[:c.s.chunk]
	}
	n, err := c.Conn.Read(p)
	if n > 0 {
		if werr := c.wait(c.up, c.s.up, n); werr != nil && err == nil {
			err = werr
		}
	}
	return n, err
}

func (c *shapedConn) Close() error {
	c.cancel()
	return c.Conn.Close()
}

// wait takes n tokens from the connection's and the shared bucket.
func (c *shapedConn) wait(own, shared *rate.Limiter, n int) error {
	if !c.s.enabled.Load() {
		return nil
	}
	for _, l := range []*rate.Limiter{own, shared} {
		if l == nil {
			continue
		}
		if err := l.WaitN(c.ctx, n); err != nil {
			return net.ErrClosed
		}
	}
	return nil
}

package wanproxy

import (
	"errors"
	"fmt"
	"net/url"
	"time"
)

// Defaults for a realistic cloud bucket seen from a VM in the same region.
const (
	DefaultTTFB           = 30 * time.Millisecond
	DefaultConnBandwidth  = 60_000_000    // bytes/s, one TCP flow
	DefaultTotalBandwidth = 1_200_000_000 // bytes/s, the whole link
	// DefaultChunk is the largest write or read passed to the network in
	// one piece; token-bucket bursts are at least this big.
	DefaultChunk = 256 << 10
)

// ErrInvalidConfig reports an unusable Config.
var ErrInvalidConfig = errors.New("wanproxy: invalid configuration")

// Config describes one proxy. Bandwidths are bytes per second; zero means
// unlimited. A zero TTFB adds no delay.
type Config struct {
	// Upstream is the server's base URL, e.g. http://127.0.0.1:9000.
	Upstream string
	// TTFB is the delay added before each request is forwarded.
	TTFB time.Duration
	// ConnBandwidth limits each client connection, per direction.
	ConnBandwidth int64
	// TotalBandwidth limits all connections together, per direction.
	TotalBandwidth int64
	// Chunk is the largest piece shaped at once; zero means DefaultChunk.
	Chunk int
	// RewriteHost sends the upstream's host:port as Host instead of the
	// client's, and points Location headers naming the upstream back at
	// the proxy. fake-gcs-server routes XML-API reads by Host and builds
	// upload-session URLs from it; S3 needs the client's Host kept, since
	// SigV4 signs it.
	RewriteHost bool `json:",omitempty"`
}

// DefaultConfig returns the defaults for upstream.
func DefaultConfig(upstream string) Config {
	return Config{
		Upstream:       upstream,
		TTFB:           DefaultTTFB,
		ConnBandwidth:  DefaultConnBandwidth,
		TotalBandwidth: DefaultTotalBandwidth,
		Chunk:          DefaultChunk,
	}
}

// validate checks cfg and returns the parsed upstream URL.
func (c Config) validate() (*url.URL, error) {
	u, err := url.Parse(c.Upstream)
	if err != nil {
		return nil, fmt.Errorf("%w: upstream: %v", ErrInvalidConfig, err)
	}
	if u.Scheme != "http" && u.Scheme != "https" || u.Host == "" {
		return nil, fmt.Errorf("%w: upstream %q is not an http(s) URL", ErrInvalidConfig, c.Upstream)
	}
	if c.TTFB < 0 || c.ConnBandwidth < 0 || c.TotalBandwidth < 0 || c.Chunk < 0 {
		return nil, fmt.Errorf("%w: negative delay, bandwidth or chunk", ErrInvalidConfig)
	}
	return u, nil
}

func (c Config) chunk() int {
	if c.Chunk <= 0 {
		return DefaultChunk
	}
	return c.Chunk
}

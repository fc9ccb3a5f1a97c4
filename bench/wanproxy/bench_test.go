package wanproxy

import (
	"io"
	"strconv"
	"testing"
)

// BenchmarkProxyUnshaped measures the proxy's own cost: 8 MiB GETs with no
// delay and no limits, so the figure is the ceiling the shaping sits under.
func BenchmarkProxyUnshaped(b *testing.B) {
	const size = 8 << 20
	p, _ := startPair(b, Config{})
	c := newClient()
	url := p.URL() + "/bkt/k?size=" + strconv.Itoa(size)
	b.SetBytes(size)
	for b.Loop() {
		resp, err := c.Get(url)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := io.Copy(io.Discard, resp.Body); err != nil {
			b.Fatal(err)
		}
		_ = resp.Body.Close()
	}
}

// BenchmarkUpstreamDirect is the same GET without the proxy, for reference.
func BenchmarkUpstreamDirect(b *testing.B) {
	const size = 8 << 20
	p, _ := startPair(b, Config{})
	c := newClient()
	url := p.Config().Upstream + "/bkt/k?size=" + strconv.Itoa(size)
	b.SetBytes(size)
	for b.Loop() {
		resp, err := c.Get(url)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := io.Copy(io.Discard, resp.Body); err != nil {
			b.Fatal(err)
		}
		_ = resp.Body.Close()
	}
}

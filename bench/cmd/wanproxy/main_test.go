package main

import (
	"io"
	"testing"
	"time"
)

func TestParseFlags(t *testing.T) {
	o, err := parseFlags([]string{"-upstream", "http://127.0.0.1:9000", "-ttfb", "5ms", "-conn-mbps", "2.5", "-total-mbps", "0"}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if o.proxy.TTFB != 5*time.Millisecond || o.proxy.ConnBandwidth != 2_500_000 || o.proxy.TotalBandwidth != 0 || o.listen != "127.0.0.1:0" {
		t.Fatalf("%+v", o)
	}
	if _, err := parseFlags(nil, io.Discard); err == nil {
		t.Fatal("missing -upstream accepted")
	}
}

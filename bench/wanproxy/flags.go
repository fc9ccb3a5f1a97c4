package wanproxy

import (
	"errors"
	"flag"
	"fmt"
	"strconv"
)

// Flags declares the emulator's shaping flags on fs (-ttfb, -conn-mbps,
// -total-mbps, defaulting to DefaultConfig) and returns the Config they
// fill in as fs parses; Upstream is left for the caller.
func Flags(fs *flag.FlagSet) *Config {
	c := DefaultConfig("")
	fs.DurationVar(&c.TTFB, "ttfb", c.TTFB, "WAN emulator: time to first byte")
	mbps := func(name string, p *int64, what string) {
		usage := fmt.Sprintf("WAN emulator: %s MB/s, 0 = unlimited (default %d)", what, *p/1e6)
		fs.Func(name, usage, func(v string) error {
			f, err := strconv.ParseFloat(v, 64)
			if err != nil || f < 0 {
				return errors.New("want a non-negative number of MB/s")
			}
			*p = int64(f * 1e6)
			return nil
		})
	}
	mbps("conn-mbps", &c.ConnBandwidth, "per-connection")
	mbps("total-mbps", &c.TotalBandwidth, "aggregate")
	return &c
}

// Command wanproxy runs the benchmark's WAN emulator by hand: a shaped
// reverse proxy in front of one object-store server, with an admin
// endpoint serving request and byte counts as JSON.
//
//	wanproxy -upstream http://127.0.0.1:9000 -listen 127.0.0.1:9100 -admin 127.0.0.1:9101
//	curl -s http://127.0.0.1:9101/stats
//
// basin-bench embeds the same proxy (package bench/wanproxy) and needs no
// separate process.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/basin-csi/basin/bench/wanproxy"
)

// options are the command's flags.
type options struct {
	listen, admin string
	proxy         wanproxy.Config
}

func parseFlags(args []string, stderr io.Writer) (options, error) {
	var o options
	fs := flag.NewFlagSet("wanproxy", flag.ContinueOnError)
	fs.SetOutput(stderr)
	proxy := wanproxy.Flags(fs)
	fs.StringVar(&proxy.Upstream, "upstream", "", "upstream server base URL (required), e.g. http://127.0.0.1:9000")
	fs.StringVar(&o.listen, "listen", "127.0.0.1:0", "address the proxy listens on")
	fs.StringVar(&o.admin, "admin", "", "address of the admin endpoint (GET /stats, GET /config); empty = none")
	if err := fs.Parse(args); err != nil {
		return o, err
	}
	o.proxy = *proxy
	if o.proxy.Upstream == "" {
		return o, errors.New("-upstream is required")
	}
	return o, nil
}

func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	o, err := parseFlags(args, stderr)
	if err != nil {
		return err
	}
	p, err := wanproxy.Start(o.proxy, o.listen)
	if err != nil {
		return err
	}
	defer func() { _ = p.Close() }()
	_, _ = fmt.Fprintf(stdout, "wanproxy: %s -> %s (ttfb %v, conn %d B/s, total %d B/s)\n",
		p.URL(), o.proxy.Upstream, o.proxy.TTFB, o.proxy.ConnBandwidth, o.proxy.TotalBandwidth)
	if o.admin != "" {
		ln, err := net.Listen("tcp", o.admin)
		if err != nil {
			return fmt.Errorf("admin listen: %w", err)
		}
		srv := &http.Server{Handler: p.AdminHandler(), ReadHeaderTimeout: 10 * time.Second}
		go func() { _ = srv.Serve(ln) }()
		defer func() { _ = srv.Close() }()
		_, _ = fmt.Fprintf(stdout, "wanproxy: admin on http://%s/stats\n", ln.Addr())
	}
	<-ctx.Done()
	return nil
}

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, os.Args[1:], os.Stdout, os.Stderr); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			os.Exit(0)
		}
		fmt.Fprintln(os.Stderr, "wanproxy:", err)
		os.Exit(2)
	}
}

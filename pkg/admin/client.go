package admin

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"syscall"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
)

// Client talks to the admin socket of one volume. It implements Volume.
type Client struct {
	// constant
	path string
	hc   *http.Client
}

var _ Volume = (*Client)(nil)

// NewClient returns a client of the admin socket at path (SocketPath of a
// cache directory). Calls are bounded by their contexts only.
func NewClient(path string) *Client {
	tr := &http.Transport{
		DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			var d net.Dialer
			return d.DialContext(ctx, "unix", path)
		},
		MaxIdleConns:      1,
		DisableKeepAlives: true,
	}
	return &Client{path: path, hc: &http.Client{Transport: tr}}
}

// Path is the socket's path.
func (c *Client) Path() string { return c.path }

// Info describes the serving process.
func (c *Client) Info(ctx context.Context) (Info, error) {
	var out Info
	return out, c.do(ctx, http.MethodGet, "/info", nil, &out)
}

// Stats returns the volume's usage and the process's counters.
func (c *Client) Stats(ctx context.Context) (Stats, error) {
	var out Stats
	return out, c.do(ctx, http.MethodGet, "/cache/stats", nil, &out)
}

// Entries lists cached objects.
func (c *Client) Entries(ctx context.Context, q EntryQuery) ([]Entry, error) {
	var out []Entry
	return out, c.do(ctx, http.MethodGet, "/cache/ls", q.values(), &out)
}

// Verify runs an integrity check in the serving process.
func (c *Client) Verify(ctx context.Context) (VerifyReport, error) {
	var out VerifyReport
	return out, c.do(ctx, http.MethodPost, "/cache/verify", nil, &out)
}

// GC evicts in the serving process.
func (c *Client) GC(ctx context.Context, r GCRequest) (GCResult, error) {
	var out GCResult
	return out, c.do(ctx, http.MethodPost, "/cache/gc", r.values(), &out)
}

// Metrics scrapes the process's metrics (in the protobuf exposition
// format).
func (c *Client) Metrics(ctx context.Context) ([]*dto.MetricFamily, error) {
	resp, err := c.send(ctx, http.MethodGet, "/metrics", nil, string(expfmt.NewFormat(expfmt.TypeProtoDelim)))
	if err != nil {
		return nil, err
	}
	defer func() { _ = resp.Body.Close() }()
	if err := checkStatus(resp); err != nil {
		return nil, err
	}
	dec := expfmt.NewDecoder(resp.Body, expfmt.ResponseFormat(resp.Header))
	var out []*dto.MetricFamily
	for {
		mf := &dto.MetricFamily{}
		if err := dec.Decode(mf); errors.Is(err, io.EOF) {
			return out, nil
		} else if err != nil {
			return nil, fmt.Errorf("%w: decode metrics: %w", ErrRemote, err)
		}
		out = append(out, mf)
	}
}

// do sends a request and decodes the JSON answer into out.
func (c *Client) do(ctx context.Context, method, path string, params url.Values, out any) error {
	resp, err := c.send(ctx, method, path, params, "application/json")
	if err != nil {
		return err
	}
	defer func() { _ = resp.Body.Close() }()
	if err := checkStatus(resp); err != nil {
		return err
	}
	if err := json.NewDecoder(resp.Body).Decode(out); err != nil {
		return fmt.Errorf("%w: decode %s: %w", ErrRemote, path, err)
	}
	return nil
}

func (c *Client) send(ctx context.Context, method, path string, params url.Values, accept string) (*http.Response, error) {
	u := url.URL{Scheme: "http", Host: "admin", Path: path, RawQuery: params.Encode()}
	req, err := http.NewRequestWithContext(ctx, method, u.String(), nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Accept", accept)
	resp, err := c.hc.Do(req)
	if err != nil {
		if notServing(err) {
			return nil, fmt.Errorf("%w: %s: %w", ErrNotServing, c.path, err)
		}
		return nil, fmt.Errorf("admin: %s %s: %w", method, path, err)
	}
	return resp, nil
}

// notServing reports whether a dial failed because nothing listens on
// the socket (no socket file, or a stale one).
func notServing(err error) bool {
	return errors.Is(err, syscall.ENOENT) || errors.Is(err, syscall.ECONNREFUSED)
}

// checkStatus turns a failed response into an error wrapping
// ErrInvalidArgument (4xx) or ErrRemote.
func checkStatus(resp *http.Response) error {
	if resp.StatusCode == http.StatusOK {
		return nil
	}
	var body errorBody
	_ = json.NewDecoder(io.LimitReader(resp.Body, 64<<10)).Decode(&body)
	if body.Error == "" {
		body.Error = resp.Status
	}
	if resp.StatusCode >= 400 && resp.StatusCode < 500 {
		return fmt.Errorf("%w: %s", ErrInvalidArgument, strings.TrimPrefix(body.Error, ErrInvalidArgument.Error()+": "))
	}
	return fmt.Errorf("%w: %s", ErrRemote, body.Error)
}

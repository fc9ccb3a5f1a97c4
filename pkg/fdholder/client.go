package fdholder

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"time"
)

// DefaultTimeout bounds one request to the holder.
const DefaultTimeout = 5 * time.Second

// Client talks to a holder. Every call uses a connection of its own, so
// a Client is safe for concurrent use.
type Client struct {
	// constant
	path    string
	timeout time.Duration
}

// NewClient returns a client of the holder listening at path.
func NewClient(path string) *Client {
	return &Client{path: path, timeout: DefaultTimeout}
}

// Put hands the holder a duplicate of fd for e.VolumeID, replacing (and
// closing) the one it held for the volume before.
func (c *Client) Put(ctx context.Context, e Entry, fd *os.File) error {
	_, _, err := c.call(ctx, request{Op: opPut, Entry: e}, fd)
	return err
}

// Get returns the entry of a volume and a duplicate of its descriptor, or
// an error wrapping ErrNotHeld.
func (c *Client) Get(ctx context.Context, volumeID string) (Entry, *os.File, error) {
	rep, fd, err := c.call(ctx, request{Op: opGet, Entry: Entry{VolumeID: volumeID}}, nil)
	if err != nil {
		return Entry{}, nil, err
	}
	if fd == nil {
		return Entry{}, nil, fmt.Errorf("%w: get %s: reply without a descriptor", ErrProtocol, volumeID)
	}
	return rep.Entry, fd, nil
}

// Drop makes the holder close its descriptor of a volume (none held is
// success).
func (c *Client) Drop(ctx context.Context, volumeID string) error {
	_, _, err := c.call(ctx, request{Op: opDrop, Entry: Entry{VolumeID: volumeID}}, nil)
	return err
}

// List returns what the holder holds.
func (c *Client) List(ctx context.Context) ([]Entry, error) {
	rep, _, err := c.call(ctx, request{Op: opList}, nil)
	return rep.Entries, err
}

// Watch connects to the holder and returns its instance name and a
// channel closed when that holder goes away (or ctx ends): a new holder
// holds nothing, so the caller hands it its descriptors again.
func (c *Client) Watch(ctx context.Context) (instance string, gone <-chan struct{}, err error) {
	conn, err := c.dial(ctx)
	if err != nil {
		return "", nil, err
	}
	rep, _, err := c.exchange(ctx, conn, request{Op: opWatch}, nil)
	if err != nil {
		_ = conn.Close()
		return "", nil, err
	}
	_ = conn.SetDeadline(time.Time{})
	ch := make(chan struct{})
	stop := context.AfterFunc(ctx, func() { _ = conn.Close() })
	go func() {
		defer close(ch)
		defer stop()
		defer func() { _ = conn.Close() }()
		var r reply
		for {
			fd, err := receive(conn, &r)
			if fd != nil {
				_ = fd.Close()
			}
			if err != nil {
				return
			}
		}
	}()
	return rep.Instance, ch, nil
}

func (c *Client) dial(ctx context.Context) (*net.UnixConn, error) {
	d := net.Dialer{Timeout: c.timeout}
	conn, err := d.DialContext(ctx, "unixpacket", c.path)
	if err != nil {
		return nil, fmt.Errorf("%w: connect to %s: %w", ErrUnavailable, c.path, err)
	}
	return conn.(*net.UnixConn), nil
}

// call sends one request on a new connection and returns the reply and
// the descriptor that came with it.
func (c *Client) call(ctx context.Context, req request, fd *os.File) (reply, *os.File, error) {
	conn, err := c.dial(ctx)
	if err != nil {
		return reply{}, nil, err
	}
	defer func() { _ = conn.Close() }()
	return c.exchange(ctx, conn, req, fd)
}

// exchange sends req on conn and reads the reply, within the timeout and
// ctx.
func (c *Client) exchange(ctx context.Context, conn *net.UnixConn, req request, fd *os.File) (reply, *os.File, error) {
	deadline := time.Now().Add(c.timeout)
	if d, ok := ctx.Deadline(); ok && d.Before(deadline) {
		deadline = d
	}
	_ = conn.SetDeadline(deadline)
	stop := context.AfterFunc(ctx, func() { _ = conn.SetDeadline(time.Unix(1, 0)) })
	defer stop()
	if err := send(conn, req, fd); err != nil {
		return reply{}, nil, fmt.Errorf("fdholder: %s %s: %w", req.Op, req.Entry.VolumeID, err)
	}
	var rep reply
	got, err := receive(conn, &rep)
	if err != nil {
		if errors.Is(err, errEOF) {
			err = fmt.Errorf("%w: holder hung up", ErrProtocol)
		}
		return reply{}, nil, fmt.Errorf("fdholder: %s %s: %w", req.Op, req.Entry.VolumeID, err)
	}
	switch {
	case rep.NotHeld:
		err = fmt.Errorf("%w: %s", ErrNotHeld, req.Entry.VolumeID)
	case rep.Error != "":
		err = fmt.Errorf("fdholder: %s %s: %s", req.Op, req.Entry.VolumeID, rep.Error)
	}
	if err != nil {
		if got != nil {
			_ = got.Close()
		}
		return reply{}, nil, err
	}
	return rep, got, nil
}

package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
)

// errStandbyReleased: the node plugin closed a standby's go-ahead
// descriptor without a go-ahead (it stopped the standby: another process
// took over, the volume was unstaged, or the plugin itself ended). The
// standby exits cleanly.
var errStandbyReleased = errors.New("standby released without a go-ahead")

// awaitGoAhead is a standby's wait (--standby-fd): it returns nil when a
// byte arrives on the inherited descriptor fd, errStandbyReleased when fd
// is closed first, or ctx's error (SIGTERM).
func awaitGoAhead(ctx context.Context, fd int) error {
	f := os.NewFile(uintptr(fd), "standby")
	if f == nil {
		return fmt.Errorf("--standby-fd %d: not a descriptor", fd)
	}
	got := make(chan error, 1)
	go func() {
		defer func() { _ = f.Close() }()
		var b [1]byte
		n, err := f.Read(b[:])
		switch {
		case n == 1:
			got <- nil
		case err == nil, errors.Is(err, io.EOF):
			got <- errStandbyReleased
		default:
			got <- fmt.Errorf("--standby-fd %d: %w", fd, err)
		}
	}()
	select {
	case err := <-got:
		return err
	case <-ctx.Done():
		return ctx.Err()
	}
}

package supervisor

import (
	"context"
	"fmt"
)

// within runs f and waits for it until ctx ends. A call into a hung FUSE
// mount cannot be interrupted: its goroutine is left behind and returns
// once the connection is aborted (the Manager closes its fd and detaches
// the mount when healing), so nothing waits for it here.
func within(ctx context.Context, op string, f func() error) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("%s: %w (%w)", op, ErrTimeout, err)
	}
	done := make(chan error, 1)
	go func() { done <- f() }()
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
		return fmt.Errorf("%s: %w (%w)", op, ErrTimeout, ctx.Err())
	}
}

package main

import (
	"context"
	"errors"
	"os"
	"syscall"
	"testing"
	"time"
)

// TestAwaitGoAhead: a byte on the descriptor is the go-ahead, its close
// without one releases the standby, and a signal (ctx) ends the wait.
func TestAwaitGoAhead(t *testing.T) {
	for _, tc := range []struct {
		name string
		act  func(w *os.File, cancel context.CancelFunc)
		want error
	}{
		{"go-ahead", func(w *os.File, _ context.CancelFunc) { _, _ = w.Write([]byte{'g'}) }, nil},
		{"released", func(w *os.File, _ context.CancelFunc) { _ = w.Close() }, errStandbyReleased},
		{"signal", func(_ *os.File, cancel context.CancelFunc) { cancel() }, context.Canceled},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r, w, err := os.Pipe()
			if err != nil {
				t.Fatal(err)
			}
			defer func() { _ = w.Close() }()
			fd, err := dupFD(r)
			if err != nil {
				t.Fatal(err)
			}
			_ = r.Close()
			ctx, cancel := context.WithCancel(t.Context())
			defer cancel()
			got := make(chan error, 1)
			go func() { got <- awaitGoAhead(ctx, fd) }()
			select {
			case err := <-got:
				t.Fatalf("returned %v before anything happened", err)
			case <-time.After(20 * time.Millisecond):
			}
			tc.act(w, cancel)
			select {
			case err := <-got:
				if !errors.Is(err, tc.want) {
					t.Errorf("awaitGoAhead: %v, want %v", err, tc.want)
				}
			case <-time.After(5 * time.Second):
				t.Fatal("awaitGoAhead did not return")
			}
		})
	}
}

// dupFD is a descriptor of f's that awaitGoAhead may own and close.
func dupFD(f *os.File) (int, error) { return syscall.Dup(int(f.Fd())) }

package cache

import (
	"context"
	"errors"
	"sync"
)

// group deduplicates concurrent calls with the same key: one runs, the
// others wait for its result (or their own context).
type group[K comparable, V any] struct {
	mu sync.Mutex
	// guarded by mu
	calls map[K]*call[V]
}

type call[V any] struct {
	done chan struct{}
	v    V
	err  error
}

// do runs fn for key unless a call is already running, whose result it
// then shares. If the shared call failed only because its caller's context
// ended while ctx is still live, do runs fn again.
func (g *group[K, V]) do(ctx context.Context, key K, fn func() (V, error)) (V, error) {
	for {
		g.mu.Lock()
		if g.calls == nil {
			g.calls = make(map[K]*call[V])
		}
		if cl, ok := g.calls[key]; ok {
			g.mu.Unlock()
			select {
			case <-cl.done:
			case <-ctx.Done():
				var zero V
				return zero, ctx.Err()
			}
			if isContextErr(cl.err) && ctx.Err() == nil {
				continue
			}
			return cl.v, cl.err
		}
		cl := &call[V]{done: make(chan struct{})}
		g.calls[key] = cl
		g.mu.Unlock()

		cl.v, cl.err = fn()
		g.mu.Lock()
		delete(g.calls, key)
		g.mu.Unlock()
		close(cl.done)
		return cl.v, cl.err
	}
}

func isContextErr(err error) bool {
	return errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded)
}

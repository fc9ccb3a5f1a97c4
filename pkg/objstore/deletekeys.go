package objstore

import (
	"context"
	"fmt"
	"sync"
)

// KeysDeleter is implemented by stores that remove many keys in one
// request: s3store (DeleteObjects, up to 1000 keys a request). Callers go
// through DeleteKeys, which reaches it through WithPrefix views and
// Wrappers and falls back to Delete on other stores.
type KeysDeleter interface {
	// DeleteKeys removes keys and returns how many went; a missing key
	// counts as removed. It stops at the first failed request.
	DeleteKeys(ctx context.Context, keys []string) (int, error)
}

// keysDeleterOf returns the KeysDeleter of s, through WithPrefix views
// and Wrappers, or false when s's store has none.
func keysDeleterOf(s Store) (KeysDeleter, bool) {
	return reach(s, func(d KeysDeleter, prefix string) KeysDeleter { return prefixKeysDeleter{d: d, prefix: prefix} })
}

// prefixKeysDeleter is the KeysDeleter of a WithPrefix view.
type prefixKeysDeleter struct {
	// constant
	d      KeysDeleter
	prefix string
}

func (p prefixKeysDeleter) DeleteKeys(ctx context.Context, keys []string) (int, error) {
	full := make([]string, len(keys))
	for i, k := range keys {
		if k == "" {
			return 0, ErrInvalidKey
		}
		full[i] = p.prefix + k
	}
	return p.d.DeleteKeys(ctx, full)
}

// DeleteKeys removes keys from s and returns how many went (a missing key
// counts as removed): in batch requests where s's store has them
// (KeysDeleter), otherwise with Delete, at most concurrency (at least 1)
// at a time. Every request is bounded by the store's own timeout; the
// error counts the failures and wraps the first.
func DeleteKeys(ctx context.Context, s Store, keys []string, concurrency int) (int, error) {
	if len(keys) == 0 {
		return 0, nil
	}
	if d, ok := keysDeleterOf(s); ok {
		return d.DeleteKeys(ctx, keys)
	}
	var (
		wg        sync.WaitGroup
		mu        sync.Mutex // guards n, failed and first
		n, failed int
		first     error
	)
	slots := make(chan struct{}, max(concurrency, 1))
	for _, k := range keys {
		if ctx.Err() != nil {
			break
		}
		select {
		case slots <- struct{}{}:
		case <-ctx.Done():
			continue
		}
		wg.Go(func() {
			defer func() { <-slots }()
			err := s.Delete(ctx, k)
			mu.Lock()
			defer mu.Unlock()
			if err == nil {
				n++
				return
			}
			if failed++; first == nil {
				first = err
			}
		})
	}
	wg.Wait()
	switch {
	case first != nil:
		return n, fmt.Errorf("objstore: %d of %d deletes failed: %w", failed, len(keys), first)
	case ctx.Err() != nil && n < len(keys):
		return n, fmt.Errorf("objstore: %d of %d keys deleted: %w", n, len(keys), ctx.Err())
	}
	return n, nil
}

// Package keyedmutex is a mutex per key: calls for one key (a volume, a
// share) are serialised, calls for different keys run at once. The zero
// Map is ready to use and safe for concurrent use; it keeps one entry per
// key ever locked (volumes on a node are few).
package keyedmutex

import "sync"

// Map is a mutex per key.
type Map struct {
	mu sync.Mutex
	m  map[string]*sync.Mutex // guarded by mu
}

// Lock locks key's mutex and returns its unlock.
func (k *Map) Lock(key string) (unlock func()) {
	k.mu.Lock()
	if k.m == nil {
		k.m = map[string]*sync.Mutex{}
	}
	l := k.m[key]
	if l == nil {
		l = &sync.Mutex{}
		k.m[key] = l
	}
	k.mu.Unlock()
	l.Lock()
	return l.Unlock
}

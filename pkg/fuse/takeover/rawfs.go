package takeover

import (
	"crypto/rand"
	"encoding/binary"
	"sync"
	"sync/atomic"
	"syscall"

	gofuse "github.com/hanwen/go-fuse/v2/fuse"
	"k8s.io/klog/v2"
)

// sessionFS sits between go-fuse's server and its node bridge (the
// wrapped RawFileSystem) so that a process can take over a kernel
// connection another process served:
//
//   - File handles are encoded as epoch<<35 | mode<<33 | writable<<32 |
//     bridge handle (handles.go). A handle of another epoch was opened by
//     a dead predecessor ("inherited"): it is re-opened on the bridge,
//     once, on first use.
//   - In a resumed session a node ID the bridge does not know is revived
//     first (LOOKUP "." on that node ID).
//   - The kernel's lookup counts of a resumed session include references
//     the predecessor handed out. The bridge panics when asked to forget
//     more than it handed out itself, so the shim mirrors the bridge's
//     count per node and forwards at most that much.
//   - Opens are recorded by I/O mode in the ledger (ledger.go); a resumed
//     session pins the inodes with inherited opens to their mode
//     (iomode.go).
//   - The kernel resends the requests the predecessor read and did not
//     answer. The ledger counts a resent open or release once, and a
//     resent rename, unlink, rmdir or mkdir the predecessor carried out is
//     answered as done (resent.go).
//
// A fresh session pays for the handle encoding and the ledger's appends.
type sessionFS struct {
	gofuse.RawFileSystem
	// constant
	epoch   uint64 // 29 random bits, shifted into place
	resumed bool
	hooks   Hooks
	log     klog.Logger
	// set before serving:
	ledger     *ioLedger      // nil: none (no session record)
	unregister func(id int32) // releases a backing ID; nil: none

	// holding counts the entries of releasing: while it is 0 (nearly
	// always) a fresh session's opens skip mu (pinned).
	holding atomic.Int64

	mu sync.Mutex
	// guarded by mu: releases of files in another mode than passthrough
	// under way in the bridge, by inode (holdPassthrough).
	releasing map[uint64]int
	// guarded by mu, resumed sessions only:
	lookups map[uint64]uint64    // node ID → lookups the bridge counts
	adopted map[uint64]*adoption // inherited handle → its re-opened one
	pins    map[uint64]*pin      // inode → its inherited I/O mode
}

func newSessionFS(inner gofuse.RawFileSystem, hooks Hooks, log klog.Logger, resumed bool) *sessionFS {
	var b [4]byte
	_, _ = rand.Read(b[:]) // never fails on Linux
	epoch := uint64(binary.LittleEndian.Uint32(b[:])&0x1fffffff | 1)
	return &sessionFS{
		RawFileSystem: inner,
		epoch:         epoch << fhEpochBits,
		resumed:       resumed,
		hooks:         hooks,
		log:           log,
		releasing:     map[uint64]int{},
		lookups:       map[uint64]uint64{},
		adopted:       map[uint64]*adoption{},
		pins:          map[uint64]*pin{},
	}
}

// node makes sure the bridge knows id before a request about it.
func (s *sessionFS) node(h *gofuse.InHeader, id uint64) gofuse.Status {
	if !s.resumed || id == 0 || id == gofuse.FUSE_ROOT_ID {
		return gofuse.OK
	}
	s.mu.Lock()
	known := s.lookups[id] > 0
	s.mu.Unlock()
	if known {
		return gofuse.OK
	}
	hdr := *h
	hdr.NodeId = id
	var out gofuse.EntryOut
	// Reviving is housekeeping (bounded by the operation timeout), not
	// the request's work: the kernel resends a request its caller was
	// interrupted in together with the interrupt, and a revive (or an
	// adoption, in handle) cancelled by it would fail a close with EINTR.
	st := s.RawFileSystem.Lookup(nil, &hdr, ".", &out)
	s.entered(st, &out)
	if st.Ok() && out.NodeId == 0 {
		return gofuse.Status(syscall.ESTALE)
	}
	return st
}

// entered counts a reply that made the bridge count one more lookup.
func (s *sessionFS) entered(st gofuse.Status, out *gofuse.EntryOut) {
	if !s.resumed || !st.Ok() || out.NodeId == 0 {
		return
	}
	s.mu.Lock()
	s.lookups[out.NodeId]++
	s.mu.Unlock()
}

func (s *sessionFS) Forget(id, n uint64) {
	if s.resumed {
		s.mu.Lock()
		c := s.lookups[id]
		n = min(n, c)
		if c == n {
			delete(s.lookups, id)
		} else {
			s.lookups[id] = c - n
		}
		s.mu.Unlock()
		if n == 0 {
			return // references of the predecessor: nothing to forget here
		}
	}
	s.RawFileSystem.Forget(id, n)
}

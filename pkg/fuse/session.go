package fuse

import (
	"crypto/rand"
	"encoding/binary"
	"sync"
	"sync/atomic"
	"syscall"

	gofuse "github.com/hanwen/go-fuse/v2/fuse"
)

// sessionFS sits between go-fuse's server and its node bridge so that a
// process can take over a kernel connection another process served:
//
//   - File handles are encoded as epoch<<35 | mode<<33 | writable<<32 |
//     bridge handle: a random 29-bit epoch per process, the handle's I/O
//     mode (2 bits, iomodes.go), whether it was opened for writing, and
//     go-fuse's 32-bit handle. A handle of another epoch was opened
//     by a dead predecessor ("inherited"): it is re-derived from what the
//     kernel sends (node ID, open flags) by opening the node again, once,
//     on first use: read-only, or read-write for a handle that could
//     write. A writer's open adopts the file its predecessor staged for
//     the inode (writes.go), so it goes on where it was: later writes,
//     flush and fsync work as before the death.
//   - With fs.Options.ExternalNodeID the kernel's node IDs are the inode
//     numbers of the cache's persistent table. In a resumed session a node
//     ID the bridge does not know is revived first (LOOKUP "." →
//     dirNode.LookupNode resolves the number to its path).
//   - The kernel's lookup counts of a resumed session include references
//     the predecessor handed out. The bridge panics when asked to forget
//     more than it handed out itself, so the shim mirrors the bridge's
//     count per node and forwards at most that much.
//   - The kernel gives an inode one I/O mode at a time (iomodes.go). Every
//     process records its opens by mode in a ledger; a resumed one replays
//     it and "pins" each inode with inherited opens: further opens of a
//     pinned inode take the inherited mode (passthrough on the inherited
//     backing ID, or never passthrough), and writers of an inode pinned to
//     passthrough get ETXTBSY, until the last of those opens is released.
//     Other inodes are served as by a fresh process. The mode of a handle
//     is encoded in it, so that its release is counted in the right mode
//     even by a later process.
//   - The kernel resends the requests the predecessor read and did not
//     answer. The ledger counts a resent open or release once (its records
//     carry the request's unique), and a resent rename, unlink, rmdir or
//     mkdir the predecessor carried out is answered as done (resent.go).
//
// A fresh session pays for the handle encoding and the ledger's appends.
type sessionFS struct {
	gofuse.RawFileSystem
	// constant
	epoch   uint64 // 29 random bits, shifted into place
	resumed bool
	// set before serving:
	ledger     *ioLedger        // nil: none (no session record)
	unregister func(id int32)   // releases a backing ID; nil: none
	orphaned   func(ino uint64) // the last inherited open of ino is gone; nil: none
	marker     marker           // marks resent requests for the file system (resent.go); nil: none

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

// pin is an inode with open files of another process: its opens keep
// that I/O mode until n reaches 0.
type pin struct {
	pt      bool  // passthrough (else the page cache)
	backing int32 // the inherited backing ID when pt
	n       int   // open files in that mode, inherited and our own
}

// adoption is an inherited handle re-opened in this process.
type adoption struct {
	once sync.Once
	fh   uint64 // bridge handle; valid after once
	st   gofuse.Status
}

const (
	fhBridge    = 1<<32 - 1 // the bridge's handle bits
	fhWritable  = 1 << 32
	fhModeShift = 33 // two bits: the handle's ioMode
	fhModeMask  = 3 << fhModeShift
	fhEpochBits = 35
)

func newSessionFS(inner gofuse.RawFileSystem, resumed bool) *sessionFS {
	var b [4]byte
	_, _ = rand.Read(b[:]) // never fails on Linux
	epoch := uint64(binary.LittleEndian.Uint32(b[:])&0x1fffffff | 1)
	return &sessionFS{
		RawFileSystem: inner,
		epoch:         epoch << fhEpochBits,
		resumed:       resumed,
		releasing:     map[uint64]int{},
		lookups:       map[uint64]uint64{},
		adopted:       map[uint64]*adoption{},
		pins:          map[uint64]*pin{},
	}
}

// inherit pins the inodes with open files of predecessors (a resumed
// session, before serving).
func (s *sessionFS) inherit(opens map[uint64]ioCount) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for ino, c := range opens {
		s.pins[ino] = &pin{pt: c.pt > 0, backing: c.backing, n: int(c.pt + c.cached)}
	}
}

// pinned reports whether opens of ino must keep an inherited I/O mode, or
// a release holds passthrough off (holdPassthrough): the file system then
// does not choose passthrough for it.
func (s *sessionFS) pinned(ino uint64) bool {
	if !s.resumed && s.holding.Load() == 0 {
		return false
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.releasing[ino] > 0 || (s.resumed && s.pins[ino] != nil)
}

// holdPassthrough keeps opens of ino out of passthrough until the
// returned function is called: while the bridge releases a file of ino
// opened in another mode. The bridge drops one reference to the node's
// backing ID after every release, whatever the file's mode; a passthrough
// open answered meanwhile (a writer's release runs its upload and install
// first, and the writer is gone for the file system before that) would
// get a backing ID that release then unregisters, and the kernel fails
// that open with EIO.
func (s *sessionFS) holdPassthrough(ino uint64) (done func()) {
	s.mu.Lock()
	s.releasing[ino]++
	s.holding.Add(1)
	s.mu.Unlock()
	return func() {
		s.mu.Lock()
		if s.releasing[ino]--; s.releasing[ino] <= 0 {
			delete(s.releasing, ino)
		}
		s.holding.Add(-1)
		s.mu.Unlock()
	}
}

// unpin counts a released open of a pinned inode; the last one lets the
// inode go (and its inherited backing ID).
func (s *sessionFS) unpin(ino uint64) {
	s.mu.Lock()
	p := s.pins[ino]
	if p == nil {
		s.mu.Unlock()
		return
	}
	p.n--
	last := p.n <= 0
	if last {
		delete(s.pins, ino)
	}
	s.mu.Unlock()
	if last && p.pt && s.unregister != nil {
		s.unregister(p.backing)
	}
	if last && s.orphaned != nil {
		s.orphaned(ino)
	}
}

// own encodes a bridge handle for the kernel.
func (s *sessionFS) own(fh uint64, flags uint32, mode ioMode) uint64 {
	if fh == 0 {
		return 0
	}
	if flags&syscall.O_ACCMODE != syscall.O_RDONLY {
		fh |= fhWritable
	}
	return s.epoch | uint64(mode)<<fhModeShift | fh
}

// mine reports whether fh was handed out by this process.
func (s *sessionFS) mine(fh uint64) bool { return fh == 0 || fh&^(1<<fhEpochBits-1) == s.epoch }

// handle maps a kernel handle to the bridge's. Inherited handles are
// re-opened on node (as directories if dir) with flags: read-write if the
// handle could write, else read-only.
func (s *sessionFS) handle(h *gofuse.InHeader, fh uint64, flags uint32, dir bool) (uint64, gofuse.Status) {
	if s.mine(fh) {
		return fh & fhBridge, gofuse.OK
	}
	s.mu.Lock()
	a := s.adopted[fh]
	if a == nil {
		a = &adoption{}
		s.adopted[fh] = a
	}
	s.mu.Unlock()
	a.once.Do(func() {
		// Not cancelled with the request (see node).
		acc := uint32(syscall.O_RDONLY)
		if fh&fhWritable != 0 {
			acc = syscall.O_RDWR
		}
		in := gofuse.OpenIn{InHeader: *h, Flags: flags&^(syscall.O_ACCMODE|syscall.O_CREAT|syscall.O_EXCL|syscall.O_TRUNC|syscall.O_APPEND) | acc}
		var out gofuse.OpenOut
		if dir {
			a.st = s.RawFileSystem.OpenDir(nil, &in, &out)
		} else {
			a.st = s.RawFileSystem.Open(nil, &in, &out)
		}
		a.fh = out.Fh
	})
	if !a.st.Ok() {
		s.mu.Lock()
		delete(s.adopted, fh) // try again at the next use
		s.mu.Unlock()
	}
	return a.fh, a.st
}

// keep maps a handle the bridge may use for attributes only: this
// process's own to the bridge's number, an inherited one to 0 (the node's
// attributes do). It reports whether the handle was kept.
func (s *sessionFS) keep(fh *uint64) bool {
	if s.mine(*fh) {
		*fh &= fhBridge
		return true
	}
	*fh = 0
	return false
}

// release forgets an inherited handle; it returns the bridge handle to
// release (0: none, it was never used here).
func (s *sessionFS) release(fh uint64) uint64 {
	if s.mine(fh) {
		return fh & fhBridge
	}
	s.mu.Lock()
	a := s.adopted[fh]
	delete(s.adopted, fh)
	s.mu.Unlock()
	if a == nil {
		return 0
	}
	var bfh uint64
	a.once.Do(func() { a.st = gofuse.EBADF }) // never opened: nothing to release
	if a.st.Ok() {
		bfh = a.fh
	}
	return bfh
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

// opened encodes the handle of an open reply of node ino, records its
// I/O mode and, for an inode pinned to passthrough, answers on the
// inherited backing file. A writer of such an inode is refused (its open
// is undone): its writes would land in the cache's copy.
func (s *sessionFS) opened(cancel <-chan struct{}, st gofuse.Status, h *gofuse.InHeader, ino uint64, flags uint32, out *gofuse.OpenOut, file bool) gofuse.Status {
	if !st.Ok() || !file {
		if st.Ok() {
			out.Fh = s.own(out.Fh, flags, modeDirect)
		}
		return st
	}
	mode := modeOf(out)
	// A resent open a predecessor recorded is already counted.
	again := false
	if s.resumed {
		s.mu.Lock()
		p := s.pins[ino]
		if p != nil && p.pt && (flags&syscall.O_ACCMODE != syscall.O_RDONLY || flags&syscall.O_TRUNC != 0) {
			s.mu.Unlock()
			s.RawFileSystem.Release(cancel, &gofuse.ReleaseIn{InHeader: *h, Fh: out.Fh, Flags: flags})
			return gofuse.Status(syscall.ETXTBSY)
		}
		if p != nil && p.pt {
			out.OpenFlags = (out.OpenFlags | gofuse.FOPEN_PASSTHROUGH) &^ (gofuse.FOPEN_DIRECT_IO | gofuse.FOPEN_KEEP_CACHE)
			out.BackingID, mode = p.backing, modePassthrough
		}
		again = s.ledger.recorded(ino, true, mode, h.Unique)
		if p != nil && !again {
			p.n++
		}
		s.mu.Unlock()
	}
	s.ledger.record(ino, true, mode, out.BackingID, h.Unique, !again)
	out.Fh = s.own(out.Fh, flags, mode)
	return st
}

// handleMode is the I/O mode encoded in a handle.
func handleMode(fh uint64) ioMode { return ioMode(fh&fhModeMask) >> fhModeShift }

// released records the release of a file handle fh of node ino by the
// request unique, after the file system released it: a release the
// kernel resends after a kill then finds the open still counted, or, if
// the predecessor recorded it, is not counted again.
func (s *sessionFS) released(ino, fh, unique uint64) {
	mode := handleMode(fh)
	if mode == modeDirect {
		return
	}
	again := s.ledger.recorded(ino, false, mode, unique)
	s.ledger.record(ino, false, mode, 0, unique, !again)
	if s.resumed && !again {
		s.unpin(ino)
	}
}

package takeover

import (
	"sync"
	"syscall"

	gofuse "github.com/hanwen/go-fuse/v2/fuse"
)

// File handles as the kernel sees them: epoch<<35 | mode<<33 |
// writable<<32 | bridge handle. The epoch is 29 random bits per process,
// the mode the handle's I/O mode (iomode.go), writable whether it was
// opened for writing, and the bridge handle go-fuse's 32-bit number. A
// handle of another epoch was opened by a dead predecessor ("inherited"):
// it is re-derived from what the kernel sends (node ID, open flags) by
// opening the node again on the bridge, once, on first use: read-only, or
// read-write for a handle that could write. The wrapped file system makes
// such a writer go on where its predecessor was (pkg/fuse adopts the file
// the predecessor staged), so later writes, flush and fsync work as
// before the death. The mode in the handle lets a later process count a
// release in the right mode.

const (
	fhBridge    = 1<<32 - 1 // the bridge's handle bits
	fhWritable  = 1 << 32
	fhModeShift = 33 // two bits: the handle's ioMode
	fhModeMask  = 3 << fhModeShift
	fhEpochBits = 35
)

// adoption is an inherited handle re-opened in this process.
type adoption struct {
	once sync.Once
	fh   uint64 // bridge handle; valid after once
	st   gofuse.Status
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

// handleMode is the I/O mode encoded in a handle.
func handleMode(fh uint64) ioMode { return ioMode(fh&fhModeMask) >> fhModeShift }

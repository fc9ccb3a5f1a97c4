package takeover

import (
	"syscall"
	"time"

	gofuse "github.com/hanwen/go-fuse/v2/fuse"
)

// The kernel gives an inode one I/O mode at a time: while a file of it is
// open in passthrough mode, every further open must be a passthrough open
// on the same backing file (anything else fails with EIO), and while one
// is open with the page cache, a passthrough open fails. A process that
// takes a connection over cannot see the files its predecessor opened, so
// each process keeps a ledger of its opens by mode in the cache directory
// (one per connection): the successor replays it to learn which inodes
// have inherited opens in which mode, and the backing ID of the
// passthrough ones, which stays registered in the kernel after the
// predecessor's death.
//
// A resumed session "pins" each inode with inherited opens: further opens
// of a pinned inode take the inherited mode (passthrough on the inherited
// backing ID, or never passthrough: the file system asks Session.Pinned
// before it chooses passthrough), and writers of an inode pinned to
// passthrough wait up to pinReleaseWait for the last of those opens to be
// released, and get ETXTBSY while one is still open.
// Other inodes are served as by a fresh process.

// ioMode is the kernel's I/O mode of an open file.
type ioMode uint64

const (
	modeDirect      ioMode = iota // FOPEN_DIRECT_IO: takes no inode mode
	modePassthrough               // FOPEN_PASSTHROUGH on a backing file
	modeCached                    // the page cache
)

// modeOf is the mode of an open reply.
func modeOf(out *gofuse.OpenOut) ioMode {
	switch {
	case out.OpenFlags&gofuse.FOPEN_PASSTHROUGH != 0:
		return modePassthrough
	case out.OpenFlags&gofuse.FOPEN_DIRECT_IO != 0:
		return modeDirect
	}
	return modeCached
}

// pin is an inode with open files of another process: its opens keep
// that I/O mode until n reaches 0.
type pin struct {
	pt      bool          // passthrough (else the page cache)
	backing int32         // the inherited backing ID when pt
	n       int           // open files in that mode, inherited and our own
	gone    chan struct{} // closed when the last of them is released
}

// inherit pins the inodes with open files of predecessors (a resumed
// session, before serving).
func (s *sessionFS) inherit(opens map[uint64]ioCount) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for ino, c := range opens {
		s.pins[ino] = &pin{pt: c.pt > 0, backing: c.backing, n: int(c.pt + c.cached), gone: make(chan struct{})}
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
		close(p.gone)
	}
	s.mu.Unlock()
	if last && p.pt && s.unregister != nil {
		s.unregister(p.backing)
	}
	if last {
		s.hooks.Orphaned(ino)
	}
}

// pinReleaseWait bounds a writer's wait for the inherited passthrough
// opens of its inode to be released, as pkg/fuse's ptReleaseWait does
// for a process's own: a read handle's RELEASE is asynchronous, so a
// program that read a file, closed it and opens it to append finds its
// read still open for a moment, and after a takeover that open is an
// inherited one (make soak: an append refused with ETXTBSY 45 ms after
// a FUSE process's kill, twice in an hour).
const pinReleaseWait = time.Second

// writes reports whether open flags make a writer of the file.
func writes(flags uint32) bool {
	return flags&syscall.O_ACCMODE != syscall.O_RDONLY || flags&syscall.O_TRUNC != 0
}

// awaitUnpinned returns once ino has no inherited passthrough open, or
// after pinReleaseWait. Like the file system's own wait, it ignores the
// request's interrupt.
func (s *sessionFS) awaitUnpinned(ino uint64) {
	s.mu.Lock()
	p := s.pins[ino]
	s.mu.Unlock()
	if p == nil || !p.pt {
		return
	}
	t := time.NewTimer(pinReleaseWait)
	defer t.Stop()
	select {
	case <-p.gone:
	case <-t.C:
	}
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
		if p != nil && p.pt && writes(flags) {
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

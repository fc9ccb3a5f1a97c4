package takeover

import (
	"errors"
	"fmt"
	"strconv"
	"strings"

	gofuse "github.com/hanwen/go-fuse/v2/fuse"
	"k8s.io/klog/v2"
)

// Options tie an fd-mode mount to its kernel connection.
type Options struct {
	// File is where the connection's first server records its INIT
	// negotiation and where a successor reads it ("" = not resumable: no
	// record, no ledger). The ledger lives next to it.
	File string
	// ID names the connection; a record with another ID is never used.
	ID string
	// Resume takes over a connection whose first server is gone instead
	// of answering a new INIT.
	Resume bool
}

// Hooks are the wrapped file system's part in a takeover: the layer calls
// them while it serves requests, from go-fuse's request goroutines.
type Hooks interface {
	// Orphaned: the last open file of ino that a predecessor opened was
	// released. What the file system kept for it (pkg/fuse: a staged
	// write nobody adopted) can go.
	Orphaned(ino uint64)
	// Resending marks a request of op on name (the entry's name in its
	// directory; for a rename the old name) that the kernel resent after
	// a takeover, while the wrapped file system answers it; done ends the
	// mark. The file system answers a marked request that fails the way
	// the predecessor's success would make it fail as done.
	Resending(op Op, name string) (done func())
}

// Session is the takeover layer of one process on one kernel connection.
type Session struct {
	// constant after Wrap
	fs        *sessionFS
	opts      Options
	log       klog.Logger
	inherited map[uint64]ioCount // open files of predecessors (resumed)
	unknown   bool               // resumed without a ledger
}

// Wrap puts the takeover layer over raw, go-fuse's node bridge. With
// opts.File set it opens the connection's ledger: a fresh connection
// starts an empty one, removing those of earlier connections; a resumed
// one replays it and pins the inodes its predecessors had open. log
// carries the volume's key.
func Wrap(raw gofuse.RawFileSystem, hooks Hooks, opts Options, log klog.Logger) (*Session, error) {
	if hooks == nil {
		return nil, errors.New("takeover: nil hooks")
	}
	if opts.Resume && opts.File == "" {
		return nil, fmt.Errorf("%w: resuming needs a session file", ErrNoSession)
	}
	s := &Session{fs: newSessionFS(raw, hooks, log, opts.Resume), opts: opts, log: log}
	if opts.File == "" {
		return s, nil
	}
	l, inherited, err := openLedger(ledgerPath(opts.File, opts.ID), opts.Resume, log)
	if err != nil {
		return nil, err
	}
	s.fs.ledger = l
	s.fs.inherit(inherited)
	s.inherited, s.unknown = inherited, l.unknown
	if opts.Resume {
		log.Info("resuming with inherited open files", "inodes", len(inherited))
	}
	return s, nil
}

// Pinned reports whether an open of ino must not choose passthrough: it
// keeps the I/O mode of a predecessor's open files, or the release of a
// file of ino in another mode is under way (iomode.go).
func (s *Session) Pinned(ino uint64) bool { return s.fs.pinned(ino) }

// Inherited reports whether a predecessor may still have ino open: never
// in a fresh session, always in a resumed one whose predecessors left no
// ledger, else when the ledger says so.
func (s *Session) Inherited(ino uint64) bool {
	if !s.opts.Resume {
		return false
	}
	if s.unknown {
		return true
	}
	_, ok := s.inherited[ino]
	return ok
}

// NewServer starts go-fuse on mountpoint: fresh (answering the kernel's
// INIT, and recording it when Options.File is set) or, with
// Options.Resume, resuming the connection of the /dev/fd/N mountpoint and
// asking the kernel to resend what the predecessor left unanswered. Call
// it once, before the server's Serve.
func (s *Session) NewServer(mountpoint string, mo *gofuse.MountOptions) (*gofuse.Server, error) {
	if !s.opts.Resume {
		srv, err := gofuse.NewServer(s.fs, mountpoint, mo)
		if err != nil || s.opts.File == "" {
			return srv, err
		}
		s.fs.unregister = unregisterWith(srv, s.log)
		if err := writeSessionRecord(s.opts.File, s.opts.ID, srv, s.fs, mo); err != nil {
			// Serving works; only a later takeover will not.
			s.log.Error(err, "recording the FUSE session; a takeover will remount instead")
		}
		return srv, nil
	}
	fd, err := strconv.Atoi(strings.TrimPrefix(mountpoint, "/dev/fd/"))
	if err != nil || !strings.HasPrefix(mountpoint, "/dev/fd/") {
		return nil, fmt.Errorf("%w: resuming needs a /dev/fd/N mountpoint, not %q", ErrNoSession, mountpoint)
	}
	rec, err := readSessionRecord(s.opts.File, s.opts.ID)
	if err != nil {
		return nil, err
	}
	srv, err := resumeServer(s.fs, fd, rec, mo)
	if err != nil {
		return nil, err
	}
	s.fs.unregister = unregisterWith(srv, s.log)
	if err := notifyResend(fd); err != nil {
		// Requests the predecessor read stay unanswered: their callers
		// hang until the mount is aborted. Say so loudly.
		s.log.Error(err, "the kernel did not take FUSE_NOTIFY_RESEND (Linux < 6.9?); requests in flight at the takeover will not complete")
	}
	return srv, nil
}

// unregisterWith releases inherited backing IDs through srv.
func unregisterWith(srv *gofuse.Server, log klog.Logger) func(int32) {
	return func(id int32) {
		if errno := srv.UnregisterBackingFd(id); errno != 0 {
			log.Error(errors.New(errno.Error()), "releasing an inherited backing file", "id", id)
		}
	}
}

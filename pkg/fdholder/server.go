package fdholder

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"

	"golang.org/x/sys/unix"
	"k8s.io/klog/v2"

	"github.com/basin-csi/basin/internal/unixsock"
)

// Server is the holder: a table of descriptors by volume ID, served on a
// unix socket.
type Server struct {
	// constant
	instance string

	mu   sync.Mutex        // guards held
	held map[string]heldFD // by volume ID

	probes probes // statfs.go
}

type heldFD struct {
	entry Entry
	fd    *os.File
}

// NewServer returns an empty holder.
func NewServer() *Server {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return &Server{instance: hex.EncodeToString(b[:]), held: map[string]heldFD{}, probes: newProbes()}
}

// Listen binds the holder's socket at path (0600, in a 0700 directory
// created if missing), replacing a stale socket.
func Listen(path string) (*net.UnixListener, error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return nil, fmt.Errorf("fdholder: %w", err)
	}
	lis, err := unixsock.ListenNetwork("unixpacket", path)
	if err != nil {
		return nil, fmt.Errorf("fdholder: listen on %s: %w", path, err)
	}
	if err := os.Chmod(path, 0o600); err != nil {
		_ = lis.Close()
		return nil, fmt.Errorf("fdholder: %w", err)
	}
	return lis.(*net.UnixListener), nil
}

// Serve answers clients on lis until ctx ends; it closes lis and every
// connection then, but keeps the descriptors (Close releases them).
func (s *Server) Serve(ctx context.Context, lis *net.UnixListener) error {
	stop := context.AfterFunc(ctx, func() { _ = lis.Close() })
	defer stop()
	var wg sync.WaitGroup
	defer wg.Wait()
	for {
		c, err := lis.AcceptUnix()
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			if errors.Is(err, net.ErrClosed) {
				return err
			}
			klog.ErrorS(err, "fdholder: accept")
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer func() { _ = c.Close() }()
			closeOnStop := context.AfterFunc(ctx, func() { _ = c.Close() })
			defer closeOnStop()
			if err := authorize(c); err != nil {
				klog.ErrorS(err, "fdholder: refusing a client")
				return
			}
			s.serveConn(c, ctx.Done())
		}()
	}
}

// authorize admits peers running as root or as the holder's own user.
func authorize(c *net.UnixConn) error {
	raw, err := c.SyscallConn()
	if err != nil {
		return err
	}
	var cred *unix.Ucred
	var cerr error
	if err := raw.Control(func(fd uintptr) {
		cred, cerr = unix.GetsockoptUcred(int(fd), unix.SOL_SOCKET, unix.SO_PEERCRED)
	}); err != nil {
		return err
	}
	if cerr != nil {
		return cerr
	}
	if cred.Uid != 0 && int(cred.Uid) != os.Geteuid() {
		return fmt.Errorf("peer pid %d runs as uid %d", cred.Pid, cred.Uid)
	}
	return nil
}

// serveConn answers one client's requests until it hangs up; stop ends
// a statfs wait.
func (s *Server) serveConn(c *net.UnixConn, stop <-chan struct{}) {
	for {
		var req request
		fd, err := receive(c, &req)
		if err != nil {
			if !errors.Is(err, errEOF) && !errors.Is(err, net.ErrClosed) {
				klog.V(2).InfoS("fdholder: client gone", "err", err)
			}
			return
		}
		var rep reply
		var out *os.File
		if req.Op == opStatfs {
			rep = s.probes.statfs(req, fd, stop) // may wait: outside s.mu
		} else {
			rep, out = s.handle(req, fd)
		}
		err = send(c, rep, out)
		if out != nil {
			_ = out.Close() // the client has its own duplicate now
		}
		if err != nil {
			return
		}
	}
}

// handle answers one request; fd is the descriptor that came with it.
// The returned file, if any, goes with the reply and is closed after.
func (s *Server) handle(req request, fd *os.File) (reply, *os.File) {
	if req.Op != opPut && fd != nil {
		_ = fd.Close()
	}
	id := req.Entry.VolumeID
	if req.Op != opList && req.Op != opWatch && id == "" {
		if req.Op == opPut && fd != nil {
			_ = fd.Close()
		}
		return reply{Error: "no volume ID"}, nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	switch req.Op {
	case opPut:
		if fd == nil {
			return reply{Error: "put without a descriptor"}, nil
		}
		if old, ok := s.held[id]; ok {
			_ = old.fd.Close()
		}
		s.held[id] = heldFD{entry: req.Entry, fd: fd}
		klog.InfoS("holding a FUSE connection", "volume", id, "session", req.Entry.Session, "dev", req.Entry.Dev)
		return reply{Entry: req.Entry}, nil
	case opGet:
		h, ok := s.held[id]
		if !ok {
			return reply{NotHeld: true}, nil
		}
		dup, err := dupFile(h.fd)
		if err != nil {
			return reply{Error: err.Error()}, nil
		}
		return reply{Entry: h.entry}, dup
	case opDrop:
		if h, ok := s.held[id]; ok {
			_ = h.fd.Close()
			delete(s.held, id)
			klog.InfoS("released a FUSE connection", "volume", id, "session", h.entry.Session)
		}
		return reply{}, nil
	case opList:
		return reply{Entries: s.entriesLocked()}, nil
	case opWatch:
		return reply{Instance: s.instance}, nil
	}
	return reply{Error: fmt.Sprintf("%s %q", unknownOp, req.Op)}, nil
}

// unknownOp starts the error of a request the holder does not know; a
// client recognises older holders by it, so it never changes.
const unknownOp = "unknown operation"

// dupFile duplicates f's descriptor (close-on-exec).
func dupFile(f *os.File) (*os.File, error) {
	raw, err := f.SyscallConn()
	if err != nil {
		return nil, err
	}
	var d int
	var derr error
	if err := raw.Control(func(fd uintptr) { d, derr = unix.FcntlInt(fd, unix.F_DUPFD_CLOEXEC, 0) }); err != nil {
		return nil, err
	}
	if derr != nil {
		return nil, fmt.Errorf("fdholder: dup: %w", derr)
	}
	return os.NewFile(uintptr(d), f.Name()), nil
}

// Entries lists what the holder holds, by volume ID.
func (s *Server) Entries() []Entry {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.entriesLocked()
}

func (s *Server) entriesLocked() []Entry {
	out := make([]Entry, 0, len(s.held))
	for _, h := range s.held {
		out = append(out, h.entry)
	}
	slices.SortFunc(out, func(a, b Entry) int { return strings.Compare(a.VolumeID, b.VolumeID) })
	return out
}

// Close releases every held descriptor: connections nobody else holds are
// aborted by the kernel.
func (s *Server) Close() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for id, h := range s.held {
		_ = h.fd.Close()
		delete(s.held, id)
	}
}

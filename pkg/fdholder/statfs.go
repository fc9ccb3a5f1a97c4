package fdholder

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"golang.org/x/sys/unix"
)

// The holder asks a mount's file system for its figures (statfs) on the
// node plugin's behalf. The kernel waits without end, and without letting
// the caller die, for a FUSE request that a server read and never
// answered: when a FUSE process dies with the node plugin's statfs in
// hand, only its successor answers it (the kernel resends it), and the
// successor is started by the next node plugin, which cannot start while
// the old one has a thread in that wait. The holder outlives node plugin
// restarts, so a statfs it sends waits at worst until the successor
// resends it, and the node plugin never waits in the kernel itself.
//
// One statfs per connection (Entry.Dev) is in the kernel at a time: a
// request while one is under way waits for its answer, so a dead server
// costs the holder one thread per connection, not one per check, and two
// checks of a healthy mount at the same moment both get figures.

// Sentinel errors of Statfs.
var (
	// ErrPending: the file system has not answered a statfs within the
	// wait (this one, or an earlier one still in the kernel).
	ErrPending = errors.New("fdholder: the file system has not answered statfs")
	// ErrFileSystem: the file system answered statfs with an error; the
	// unix.Errno is wrapped too.
	ErrFileSystem = errors.New("fdholder: statfs failed")
	// ErrUnsupported: the holder is of a version without statfs.
	ErrUnsupported = errors.New("fdholder: the holder does not run statfs")
)

// maxStatfsWait bounds how long the holder waits for one statfs before it
// answers Pending (the statfs goes on in the kernel).
const maxStatfsWait = time.Minute

// probes runs the holder's statfs calls, one per connection at a time:
// a request for a connection whose statfs is under way waits for that
// call's answer (within its own wait) instead of sending another.
type probes struct {
	mu       sync.Mutex
	inflight map[uint64]*probeCall // by device number
}

// probeCall is one statfs in the kernel; st and err are set before done
// is closed.
type probeCall struct {
	done chan struct{}
	st   unix.Statfs_t
	err  error
}

func newProbes() probes { return probes{inflight: map[uint64]*probeCall{}} }

// statfs answers an opStatfs request; root is the mount's O_PATH
// descriptor, closed once the call returned (or at once when another
// call of the connection is under way). It answers Pending when stop is
// closed.
func (p *probes) statfs(req request, root *os.File, stop <-chan struct{}) reply {
	if root == nil {
		return reply{Error: "statfs without a descriptor"}
	}
	dev := req.Entry.Dev
	p.mu.Lock()
	call, joined := p.inflight[dev]
	if !joined {
		call = &probeCall{done: make(chan struct{})}
		p.inflight[dev] = call
	}
	p.mu.Unlock()
	if joined {
		_ = root.Close()
	} else {
		go func() {
			call.err = unix.Fstatfs(int(root.Fd()), &call.st)
			p.mu.Lock()
			delete(p.inflight, dev)
			p.mu.Unlock()
			close(call.done)
			// Last: the descriptor keeps the mount's device number in
			// use, so no new mount can get it while this call is listed.
			_ = root.Close()
		}()
	}
	t := time.NewTimer(min(time.Duration(req.WaitMillis)*time.Millisecond, maxStatfsWait))
	defer t.Stop()
	select {
	case <-call.done:
	case <-t.C:
		return reply{Pending: true}
	case <-stop: // the holder is stopping
		return reply{Pending: true}
	}
	var errno unix.Errno
	switch {
	case call.err == nil:
		st := call.st
		return reply{Statfs: &st}
	case errors.As(call.err, &errno):
		return reply{Errno: int(errno)}
	}
	return reply{Error: call.err.Error()}
}

// Statfs asks the holder to statfs the mount whose root root is (an
// O_PATH descriptor; the caller keeps and closes its own) and whose
// device number is dev, waiting until ctx ends (at most a minute). The
// file system's own failure wraps ErrFileSystem and its unix.Errno; a call
// that did not return in time wraps ErrPending; a holder without statfs
// wraps ErrUnsupported.
func (c *Client) Statfs(ctx context.Context, dev uint64, root *os.File) (unix.Statfs_t, error) {
	wait := maxStatfsWait
	if d, ok := ctx.Deadline(); ok {
		// Answer before the caller gives up: a Pending reply tells it
		// why, where its own deadline would only say "timeout".
		wait = min(wait, time.Until(d)*9/10)
	}
	cc := *c
	cc.timeout = wait + c.timeout // the holder answers within wait
	// A volume ID in name only: a holder of an earlier version refuses a
	// request without one before it says the operation is unknown.
	req := request{Op: opStatfs, Entry: Entry{Dev: dev, VolumeID: "dev " + strconv.FormatUint(dev, 10)}, WaitMillis: wait.Milliseconds()}
	rep, fd, err := cc.call(ctx, req, root)
	if fd != nil {
		_ = fd.Close()
	}
	switch {
	case err != nil && strings.Contains(err.Error(), unknownOp):
		// A holder of an earlier version (it names unknown operations so).
		return unix.Statfs_t{}, fmt.Errorf("%w: %w", ErrUnsupported, err)
	case err != nil:
		return unix.Statfs_t{}, err
	case rep.Pending:
		return unix.Statfs_t{}, fmt.Errorf("%w (device %d:%d)", ErrPending, unix.Major(dev), unix.Minor(dev))
	case rep.Errno != 0:
		return unix.Statfs_t{}, fmt.Errorf("%w: %w", ErrFileSystem, unix.Errno(rep.Errno))
	case rep.Statfs == nil:
		return unix.Statfs_t{}, fmt.Errorf("%w: statfs reply without figures", ErrProtocol)
	}
	return *rep.Statfs, nil
}

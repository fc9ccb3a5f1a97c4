package takeover

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"unsafe"

	gofuse "github.com/hanwen/go-fuse/v2/fuse"
	"golang.org/x/sys/unix"

	"github.com/basin-csi/basin/internal/atomicfile"
)

// Resuming an initialised kernel connection.
//
// go-fuse's NewServer answers the kernel's INIT before it serves anything,
// but a process taking over a live /dev/fuse descriptor gets no INIT: the
// kernel negotiated once, with the first process. The adapter here keeps
// go-fuse unchanged: the first process records the INIT it received (and
// the reply go-fuse computes for it) in a session file; a successor hands
// NewServer a socketpair on which it has written that same INIT, checks
// that go-fuse answers it exactly as before, then atomically replaces the
// socket's descriptor number with the live /dev/fuse descriptor (dup3)
// before Serve reads anything. Finally it asks the kernel to resend the
// requests its predecessor read but never answered (FUSE_NOTIFY_RESEND,
// Linux ≥ 6.9).

// ErrNoSession is returned when a mount asked to resume has no usable
// session record (never written, or written for another connection).
var ErrNoSession = errors.New("takeover: no session record to resume")

// sessionRecord is what a successor needs to resume a connection.
type sessionRecord struct {
	// ID names the kernel connection (the node plugin makes one per
	// mount(2)); a record of another connection is never used.
	ID string `json:"id"`
	// InitIn is the kernel's INIT request body, InitOut go-fuse's reply.
	InitIn  []byte `json:"initIn"` // a gofuse.InitIn, header included
	InitOut []byte `json:"initOut"`
}

const (
	opInit     = 26 // FUSE_INIT
	notifyCode = 7  // FUSE_NOTIFY_RESEND
)

// writeSessionRecord records a fresh server's negotiation in path (0600,
// atomically).
func writeSessionRecord(path, id string, srv *gofuse.Server, rawfs gofuse.RawFileSystem, mo *gofuse.MountOptions) error {
	in := *srv.KernelSettings()
	inBytes := bytes.Clone(unsafe.Slice((*byte)(unsafe.Pointer(&in)), unsafe.Sizeof(in)))
	out, err := initReply(rawfs, mo, inBytes)
	if err != nil {
		return err
	}
	b, err := json.Marshal(sessionRecord{ID: id, InitIn: inBytes, InitOut: out})
	if err != nil {
		return err
	}
	// Not fsynced: the record only serves a successor on the same kernel
	// connection, which a machine crash ends.
	if err := atomicfile.WriteFile(path, b, 0o600, atomicfile.NoSync); err != nil {
		return fmt.Errorf("takeover: session record: %w", err)
	}
	return nil
}

// readSessionRecord loads the record of connection id.
func readSessionRecord(path, id string) (sessionRecord, error) {
	var rec sessionRecord
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return rec, fmt.Errorf("%w: %s does not exist", ErrNoSession, path)
	}
	if err != nil {
		return rec, fmt.Errorf("takeover: session record: %w", err)
	}
	if err := json.Unmarshal(b, &rec); err != nil {
		return rec, fmt.Errorf("%w: %s: %v", ErrNoSession, path, err)
	}
	if rec.ID != id {
		return rec, fmt.Errorf("%w: %s belongs to connection %q, not %q", ErrNoSession, path, rec.ID, id)
	}
	return rec, nil
}

// initRequest is a FUSE_INIT request with the body of in (an InitIn,
// header included, as go-fuse keeps it).
func initRequest(in []byte) []byte {
	req := bytes.Clone(in)
	h := (*gofuse.InHeader)(unsafe.Pointer(&req[0]))
	*h = gofuse.InHeader{Length: uint32(len(req)), Opcode: opInit, Unique: 1}
	return req
}

// initReply is the INIT reply body go-fuse gives for in (see initRequest).
func initReply(rawfs gofuse.RawFileSystem, mo *gofuse.MountOptions, in []byte) ([]byte, error) {
	ps := gofuse.NewProtocolServer(rawfs, mo)
	out := make([]byte, 4096)
	n, st := ps.HandleRequest([][]byte{initRequest(in)}, [][]byte{out})
	return checkInitReply(out[:n], st)
}

// checkInitReply strips the header of an INIT reply, refusing an error.
func checkInitReply(reply []byte, st gofuse.Status) ([]byte, error) {
	var oh gofuse.OutHeader
	size := int(unsafe.Sizeof(oh))
	if !st.Ok() || len(reply) < size {
		return nil, fmt.Errorf("takeover: INIT answered %v with %d bytes", st, len(reply))
	}
	oh = *(*gofuse.OutHeader)(unsafe.Pointer(&reply[0]))
	if oh.Status != 0 {
		return nil, fmt.Errorf("takeover: INIT refused: errno %d", -oh.Status)
	}
	return reply[size:], nil
}

// resumeServer starts a go-fuse server on fuseFD, a /dev/fuse descriptor
// whose connection rec describes. fuseFD stays the caller's.
func resumeServer(rawfs gofuse.RawFileSystem, fuseFD int, rec sessionRecord, mo *gofuse.MountOptions) (*gofuse.Server, error) {
	sp, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_SEQPACKET|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("takeover: resume: %w", err)
	}
	defer func() { _ = unix.Close(sp[1]) }()
	if _, err := unix.Write(sp[1], initRequest(rec.InitIn)); err != nil {
		_ = unix.Close(sp[0])
		return nil, fmt.Errorf("takeover: resume: %w", err)
	}
	srv, err := gofuse.NewServer(rawfs, fmt.Sprintf("/dev/fd/%d", sp[0]), mo)
	if err != nil {
		_ = unix.Close(sp[0])
		return nil, fmt.Errorf("takeover: resume: %w", err)
	}
	// From here go-fuse owns sp[0] (its *os.File closes it).
	buf := make([]byte, 4096)
	n, err := unix.Read(sp[1], buf)
	if err != nil {
		return nil, fmt.Errorf("takeover: resume: reading the INIT reply: %w", err)
	}
	out, err := checkInitReply(buf[:n], gofuse.OK)
	if err != nil {
		return nil, err
	}
	if !bytes.Equal(out, rec.InitOut) {
		// Another binary or other options would negotiate differently
		// from what the kernel holds: serving would misparse requests.
		return nil, fmt.Errorf("%w: this process would negotiate differently from the connection's first server", ErrNoSession)
	}
	if err := unix.Dup3(fuseFD, sp[0], unix.O_CLOEXEC); err != nil {
		return nil, fmt.Errorf("takeover: resume: %w", err)
	}
	return srv, nil
}

// notifyResend asks the kernel to queue again every request that was read
// from the connection but not answered.
func notifyResend(fd int) error {
	var oh gofuse.OutHeader
	size := int(unsafe.Sizeof(oh))
	oh.Length = uint32(size)
	oh.Status = notifyCode
	_, err := unix.Write(fd, unsafe.Slice((*byte)(unsafe.Pointer(&oh)), size))
	if err != nil {
		return fmt.Errorf("takeover: FUSE_NOTIFY_RESEND: %w", err)
	}
	return nil
}

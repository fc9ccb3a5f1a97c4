package fdholder

import (
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"

	"golang.org/x/sys/unix"
)

// DefaultSocket is where the holder listens on a node.
const DefaultSocket = "/var/lib/basin/fdholder/fdholder.sock"

// Entry describes one held connection.
type Entry struct {
	// VolumeID names the volume whose staging path the connection serves.
	VolumeID string `json:"volume"`
	// Session is the session ID the connection's FUSE processes resume
	// with (`csi-driver mount --session`).
	Session string `json:"session"`
	// Dev is the device number of the mount (st_dev of its root), which
	// tells whether the staging path still shows this connection.
	Dev uint64 `json:"dev"`
}

// Sentinel errors.
var (
	// ErrNotHeld: the holder has no descriptor for that volume.
	ErrNotHeld = errors.New("fdholder: no descriptor held for the volume")
	// ErrUnavailable: no holder listens on the socket.
	ErrUnavailable = errors.New("fdholder: no holder")
	// ErrProtocol: a malformed or unexpected message.
	ErrProtocol = errors.New("fdholder: protocol error")
)

// Operations.
const (
	opPut   = "put"   // Entry + descriptor: hold it (replacing the volume's previous one)
	opGet   = "get"   // Entry.VolumeID: reply with the entry and a duplicate of its descriptor
	opDrop  = "drop"  // Entry.VolumeID: close the held descriptor
	opList  = "list"  // reply with every entry (no descriptors)
	opWatch = "watch" // reply once, then keep the connection open until the holder stops
	// Entry.Dev + an O_PATH descriptor of a mount's root: fstatfs it
	// (statfs.go), waiting at most request.WaitMillis.
	opStatfs = "statfs"
)

// request is a client's packet.
type request struct {
	Op         string `json:"op"`
	Entry      Entry  `json:"entry"`
	WaitMillis int64  `json:"waitMillis,omitempty"` // statfs
}

// reply is the server's packet.
type reply struct {
	Error    string  `json:"error,omitempty"`
	NotHeld  bool    `json:"notHeld,omitempty"`
	Entry    Entry   `json:"entry"`
	Entries  []Entry `json:"entries,omitempty"`
	Instance string  `json:"instance,omitempty"` // names the holder's run (watch)
	// statfs: the figures, or the errno, or Pending when the file system
	// has not answered (this request's or an earlier one's).
	Statfs  *unix.Statfs_t `json:"statfs,omitempty"`
	Errno   int            `json:"errno,omitempty"`
	Pending bool           `json:"pending,omitempty"`
}

// maxPacket bounds one packet: a list of a few thousand volumes.
const maxPacket = 1 << 20

// send writes v as one packet, with fd attached when not nil.
func send(c *net.UnixConn, v any, fd *os.File) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	var oob []byte
	if fd != nil {
		oob = unix.UnixRights(int(fd.Fd()))
	}
	if _, _, err := c.WriteMsgUnix(b, oob, nil); err != nil {
		return fmt.Errorf("fdholder: send: %w", err)
	}
	return nil
}

// receive reads one packet into v and returns the descriptor that came
// with it (nil if none). Extra descriptors are closed.
func receive(c *net.UnixConn, v any) (*os.File, error) {
	buf := make([]byte, maxPacket)
	oob := make([]byte, unix.CmsgSpace(4*4))
	n, oobn, flags, _, err := c.ReadMsgUnix(buf, oob)
	if err != nil {
		return nil, err
	}
	fds, rerr := rights(oob[:oobn])
	var fd *os.File
	for i, d := range fds {
		unix.CloseOnExec(d)
		if i == 0 {
			fd = os.NewFile(uintptr(d), "fuse-connection")
		} else {
			_ = unix.Close(d)
		}
	}
	fail := func(err error) (*os.File, error) {
		if fd != nil {
			_ = fd.Close()
		}
		return nil, err
	}
	switch {
	case rerr != nil:
		return fail(rerr)
	case n == 0:
		return fail(errEOF)
	}
	if flags&(unix.MSG_TRUNC|unix.MSG_CTRUNC) != 0 {
		return fail(fmt.Errorf("%w: packet truncated", ErrProtocol))
	}
	if err := json.Unmarshal(buf[:n], v); err != nil {
		return fail(fmt.Errorf("%w: %w", ErrProtocol, err))
	}
	return fd, nil
}

// errEOF: the peer closed the connection (a zero-length packet).
var errEOF = errors.New("fdholder: connection closed")

// rights returns the descriptors of the SCM_RIGHTS messages in oob, also
// those parsed before an error (the caller closes them).
func rights(oob []byte) ([]int, error) {
	if len(oob) == 0 {
		return nil, nil
	}
	msgs, err := unix.ParseSocketControlMessage(oob)
	if err != nil {
		return nil, fmt.Errorf("%w: control message: %w", ErrProtocol, err)
	}
	var fds []int
	for i := range msgs {
		if msgs[i].Header.Level != unix.SOL_SOCKET || msgs[i].Header.Type != unix.SCM_RIGHTS {
			continue
		}
		f, err := unix.ParseUnixRights(&msgs[i])
		if err != nil {
			return fds, fmt.Errorf("%w: rights: %w", ErrProtocol, err)
		}
		fds = append(fds, f...)
	}
	return fds, nil
}

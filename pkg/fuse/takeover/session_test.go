package takeover

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"unsafe"

	gofuse "github.com/hanwen/go-fuse/v2/fuse"
	"golang.org/x/sys/unix"
	"k8s.io/klog/v2"
)

// TestWrapInherited: what Wrap tells the file system about predecessors'
// open files, with a ledger, without one, and in a fresh session.
func TestWrapInherited(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "fuse-session.json")
	raw := func() gofuse.RawFileSystem { return &rawStub{RawFileSystem: gofuse.NewDefaultRawFileSystem()} }

	if _, err := Wrap(raw(), nil, Options{}, klog.Background()); err == nil {
		t.Error("Wrap with nil hooks succeeded")
	}
	if _, err := Wrap(raw(), &hookRecorder{}, Options{Resume: true, ID: "c"}, klog.Background()); !errors.Is(err, ErrNoSession) {
		t.Errorf("Wrap resuming without a session file: %v, want ErrNoSession", err)
	}

	// No ledger: every inode may be open in a predecessor; none pinned.
	s, err := Wrap(raw(), &hookRecorder{}, Options{File: file, ID: "c", Resume: true}, klog.Background())
	if err != nil {
		t.Fatal(err)
	}
	if !s.Inherited(10) || !s.Inherited(99) || s.Pinned(10) {
		t.Errorf("resumed without a ledger: Inherited(10) %v, Inherited(99) %v, Pinned(10) %v; want true, true, false",
			s.Inherited(10), s.Inherited(99), s.Pinned(10))
	}
	_ = s.fs.ledger.Close()

	// A fresh session: nothing inherited; it starts the ledger.
	s, err = Wrap(raw(), &hookRecorder{}, Options{File: file, ID: "c"}, klog.Background())
	if err != nil {
		t.Fatal(err)
	}
	if s.Inherited(10) || s.Pinned(10) {
		t.Error("a fresh session reports inherited opens")
	}
	openU(t, s.fs, 10, 4) // a page-cache open, left open at the death
	_ = s.fs.ledger.Close()
	if _, err := os.Stat(ledgerPath(file, "c")); err != nil {
		t.Fatalf("no ledger next to the session file: %v", err)
	}

	// Its successor learns of ino 10 only.
	s, err = Wrap(raw(), &hookRecorder{}, Options{File: file, ID: "c", Resume: true}, klog.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = s.fs.ledger.Close() }()
	if !s.Inherited(10) || s.Inherited(11) || !s.Pinned(10) || s.Pinned(11) {
		t.Errorf("resumed: Inherited(10) %v, Inherited(11) %v, Pinned(10) %v, Pinned(11) %v; want true, false, true, false",
			s.Inherited(10), s.Inherited(11), s.Pinned(10), s.Pinned(11))
	}
}

// TestSessionNewServerHandsOver runs a takeover on socketpairs standing in
// for the kernel: a fresh session answers the kernel's INIT and records
// it; a second session resumes from the record on another descriptor of
// the "connection", asks for the resend of unanswered requests, and
// serves. A record of another connection and a mountpoint that is not a
// descriptor are refused with ErrNoSession.
func TestSessionNewServerHandsOver(t *testing.T) {
	file := filepath.Join(t.TempDir(), "fuse-session.json")
	wrap := func(resume bool) *Session {
		t.Helper()
		s, err := Wrap(contractFS(resume).RawFileSystem, &hookRecorder{}, Options{File: file, ID: "c", Resume: resume}, klog.Background())
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = s.fs.ledger.Close() })
		return s
	}

	first, kernel := seqpacket(t)
	if _, err := unix.Write(kernel, initRequest(kernelInit())); err != nil {
		t.Fatal(err)
	}
	m := withinTimeout(t, "Session.NewServer on a fresh connection", func() made {
		srv, err := wrap(false).NewServer(fmt.Sprintf("/dev/fd/%d", first), contractOptions())
		return made{srv, err}
	})
	if m.err != nil {
		t.Fatal(m.err)
	}
	buf := make([]byte, 4096)
	if _, err := unix.Read(kernel, buf); err != nil {
		t.Fatalf("no INIT reply: %v", err)
	}
	rec, err := readSessionRecord(file, "c")
	if err != nil {
		t.Fatalf("the fresh session wrote no record: %v", err)
	}
	if st, err := os.Stat(file); err != nil || st.Mode().Perm() != 0o600 {
		t.Errorf("session record: %v %v, want mode 0600", st, err)
	}
	if _, err := readSessionRecord(file, "other"); !errors.Is(err, ErrNoSession) {
		t.Errorf("record read for another connection: %v, want ErrNoSession", err)
	}
	if _, err := wrap(true).NewServer("/mnt/volume", contractOptions()); !errors.Is(err, ErrNoSession) {
		t.Errorf("resuming on a path: %v, want ErrNoSession", err)
	}

	// The first server dies unanswered; a successor takes its connection.
	live, kernel2 := seqpacket(t)
	defer func() { _ = unix.Close(live) }()
	m = withinTimeout(t, "Session.NewServer resuming", func() made {
		srv, err := wrap(true).NewServer(fmt.Sprintf("/dev/fd/%d", live), contractOptions())
		return made{srv, err}
	})
	if m.err != nil {
		t.Fatalf("resuming from the record %+v: %v", rec, m.err)
	}
	n, err := unix.Read(kernel2, buf)
	if err != nil {
		t.Fatal(err)
	}
	resend := gofuse.OutHeader{Length: uint32(unsafe.Sizeof(gofuse.OutHeader{})), Status: int32(-gofuse.NOTIFY_RESEND)}
	if !bytes.Equal(buf[:n], unsafe.Slice((*byte)(unsafe.Pointer(&resend)), unsafe.Sizeof(resend))) {
		t.Errorf("the successor's first message is %x, want FUSE_NOTIFY_RESEND", buf[:n])
	}
	served := make(chan struct{})
	go func() { m.srv.Serve(); close(served) }()
	req := gofuse.InHeader{Length: uint32(unsafe.Sizeof(gofuse.InHeader{})), Opcode: 17, Unique: 9, NodeId: gofuse.FUSE_ROOT_ID} // STATFS
	if _, err := unix.Write(kernel2, unsafe.Slice((*byte)(unsafe.Pointer(&req)), unsafe.Sizeof(req))); err != nil {
		t.Fatal(err)
	}
	if n, err := unix.Read(kernel2, buf); err != nil || n < int(unsafe.Sizeof(gofuse.OutHeader{})) {
		t.Fatalf("the successor does not answer (%d bytes, %v)", n, err)
	}
	if oh := *(*gofuse.OutHeader)(unsafe.Pointer(&buf[0])); oh.Unique != 9 || oh.Status != 0 {
		t.Errorf("the successor answered %+v, want unique 9, status 0", oh)
	}
	_ = unix.Close(kernel2)
	withinTimeout(t, "Serve after the connection ended", func() struct{} { <-served; return struct{}{} })
	_ = unix.Close(kernel)
}

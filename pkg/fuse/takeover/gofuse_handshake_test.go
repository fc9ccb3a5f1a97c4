package takeover

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"log"
	"testing"
	"time"
	"unsafe"

	"github.com/hanwen/go-fuse/v2/fs"
	gofuse "github.com/hanwen/go-fuse/v2/fuse"
	"golang.org/x/sys/unix"
	"k8s.io/klog/v2"
)

// The INIT handshake of a takeover, on socketpairs instead of /dev/fuse
// (see gofuse_contract_test.go): no root needed.

// maxRequest is pkg/fuse's max_read, MaxWrite and MaxReadAhead.
const maxRequest = 1 << 20

// contractOptions are mount options like pkg/fuse's Mount's (fd mode).
func contractOptions() *gofuse.MountOptions {
	return &gofuse.MountOptions{
		MaxWrite: maxRequest, MaxReadAhead: maxRequest, MaxBackground: 64,
		Name: "basin", FsName: "basin", DisableXAttrs: true, IgnoreSecurityLabels: true,
		ExtraCapabilities: gofuse.CAP_ATOMIC_O_TRUNC | gofuse.CAP_DIRECT_IO_ALLOW_MMAP,
		Logger:            log.New(io.Discard, "", 0),
	}
}

// contractFS is a file system like pkg/fuse's Mount's: sessionFS over
// go-fuse's node bridge with external node IDs.
func contractFS(resumed bool) *sessionFS {
	root := &fs.Inode{}
	return newSessionFS(fs.NewNodeFS(root, &fs.Options{ExternalNodeID: true,
		RootStableAttr: &fs.StableAttr{Ino: gofuse.FUSE_ROOT_ID}}), &hookRecorder{}, klog.Background(), resumed)
}

// kernelInit is an INIT body as a Linux 6.x kernel sends it (header
// included, as go-fuse keeps it).
func kernelInit() []byte {
	in := gofuse.InitIn{
		InHeader: gofuse.InHeader{Length: uint32(unsafe.Sizeof(gofuse.InitIn{})), Opcode: opInit, Unique: 2},
		Major:    7, Minor: 41, MaxReadAhead: 128 << 10,
		Flags: uint32(gofuse.CAP_ASYNC_READ | gofuse.CAP_POSIX_LOCKS | gofuse.CAP_ATOMIC_O_TRUNC | gofuse.CAP_BIG_WRITES |
			gofuse.CAP_READDIRPLUS | gofuse.CAP_PARALLEL_DIROPS | gofuse.CAP_MAX_PAGES | gofuse.CAP_INIT_EXT),
		Flags2: uint32(gofuse.CAP_DIRECT_IO_ALLOW_MMAP >> 32),
	}
	return bytes.Clone(unsafe.Slice((*byte)(unsafe.Pointer(&in)), unsafe.Sizeof(in)))
}

// seqpacket returns a connected SOCK_SEQPACKET pair whose reads time out
// after a few seconds.
func seqpacket(t *testing.T) (a, b int) {
	t.Helper()
	sp, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_SEQPACKET|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	tv := unix.Timeval{Sec: 5}
	for _, fd := range sp {
		if err := unix.SetsockoptTimeval(fd, unix.SOL_SOCKET, unix.SO_RCVTIMEO, &tv); err != nil {
			t.Fatal(err)
		}
	}
	return sp[0], sp[1]
}

// withinTimeout runs f, failing the test with what if it has not returned
// within 10s (f keeps running).
func withinTimeout[T any](t *testing.T, what string, f func() T) T {
	t.Helper()
	ch := make(chan T, 1)
	go func() { ch <- f() }()
	select {
	case v := <-ch:
		return v
	case <-time.After(10 * time.Second):
		t.Fatalf("go-fuse changed: %s did not return within 10s", what)
		var zero T
		return zero
	}
}

// made is a go-fuse server made, or why not.
type made struct {
	srv *gofuse.Server
	err error
}

// TestGoFuseAnswersInitInNewServer: NewServer on a /dev/fd/N descriptor
// reads the INIT from it and answers it before returning, with the reply
// ProtocolServer.HandleRequest computes for the same INIT (what the
// session record holds), keeps the INIT as KernelSettings (what the record
// is written from), and reads nothing more until Serve.
func TestGoFuseAnswersInitInNewServer(t *testing.T) {
	served, kernel := seqpacket(t)
	in := kernelInit()
	want, err := initReply(contractFS(false), contractOptions(), in)
	if err != nil {
		t.Fatalf("ProtocolServer.HandleRequest does not answer INIT: %v", err)
	}
	var out gofuse.InitOut
	copy(unsafe.Slice((*byte)(unsafe.Pointer(&out)), unsafe.Sizeof(out)), want)
	if out.Major != 7 || out.Minor < 28 || out.MaxWrite != maxRequest {
		t.Errorf("ProtocolServer's INIT reply is %+v; want protocol 7.28 or later and MaxWrite %d", out, maxRequest)
	}

	if _, err := unix.Write(kernel, initRequest(in)); err != nil {
		t.Fatal(err)
	}
	m := withinTimeout(t, "NewServer on a /dev/fd/N descriptor holding an INIT", func() made {
		srv, err := gofuse.NewServer(contractFS(false), fmt.Sprintf("/dev/fd/%d", served), contractOptions())
		return made{srv, err}
	})
	if m.err != nil {
		t.Fatalf("go-fuse changed: NewServer on /dev/fd/%d refuses an INIT: %v", served, m.err)
	}
	// From here go-fuse owns served.
	buf := make([]byte, 4096)
	n, err := unix.Read(kernel, buf)
	if err != nil {
		t.Fatalf("go-fuse changed: NewServer returned without answering INIT on its descriptor: %v", err)
	}
	got, err := checkInitReply(buf[:n], gofuse.OK)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("go-fuse changed: NewServer answers INIT unlike ProtocolServer.HandleRequest, so no session record would ever match:\n  server   %x\n  protocol %x", got, want)
	}
	ks := *m.srv.KernelSettings()
	kb := unsafe.Slice((*byte)(unsafe.Pointer(&ks)), unsafe.Sizeof(ks))
	hdr := int(unsafe.Sizeof(gofuse.InHeader{}))
	if !bytes.Equal(kb[hdr:], in[hdr:]) {
		t.Errorf("go-fuse changed: KernelSettings is not the INIT it read:\n  read %x\n  kept %x", in[hdr:], kb[hdr:])
	}
	if again, err := initReply(contractFS(false), contractOptions(), bytes.Clone(kb)); err != nil || !bytes.Equal(again, want) {
		t.Errorf("the INIT recorded from KernelSettings gets another reply (%v): a successor would refuse to resume", err)
	}

	// Nothing is read before Serve: a successor swaps the live descriptor
	// in after NewServer returned.
	probe := []byte("not a request")
	if _, err := unix.Write(kernel, probe); err != nil {
		t.Fatal(err)
	}
	time.Sleep(100 * time.Millisecond)
	peek := make([]byte, 64)
	if n, _, err := unix.Recvfrom(served, peek, unix.MSG_PEEK|unix.MSG_DONTWAIT); err != nil || !bytes.Equal(peek[:n], probe) {
		t.Errorf("go-fuse changed: it read from the descriptor after INIT, before Serve (%v)", err)
	}
}

// TestResumeServerServesTheSwappedDescriptor runs resumeServer against a
// stand-in for the live connection: the recorded INIT is answered on the
// socket, the live descriptor is swapped in under go-fuse, and Serve then
// answers requests arriving on the live one. A record go-fuse would answer
// differently is refused with ErrNoSession.
func TestResumeServerServesTheSwappedDescriptor(t *testing.T) {
	in := kernelInit()
	reply, err := initReply(contractFS(false), contractOptions(), in)
	if err != nil {
		t.Fatal(err)
	}

	other := bytes.Clone(reply)
	other[len(other)-1] ^= 1
	liveOther, _ := seqpacket(t)
	_, err = resumeServer(contractFS(true), liveOther, sessionRecord{ID: "c", InitIn: in, InitOut: other}, contractOptions())
	if !errors.Is(err, ErrNoSession) {
		t.Errorf("resumeServer with a record go-fuse answers differently: %v, want ErrNoSession", err)
	}
	_ = unix.Close(liveOther)

	live, kernel := seqpacket(t)
	defer func() { _ = unix.Close(live) }()
	srv := withinTimeout(t, "resumeServer", func() *gofuse.Server {
		srv, err := resumeServer(contractFS(true), live, sessionRecord{ID: "c", InitIn: in, InitOut: reply}, contractOptions())
		if err != nil {
			t.Errorf("resumeServer: %v", err)
		}
		return srv
	})
	if srv == nil {
		t.FailNow()
	}
	served := make(chan struct{})
	go func() { srv.Serve(); close(served) }()

	// A STATFS of the root on the live connection.
	req := gofuse.InHeader{Length: uint32(unsafe.Sizeof(gofuse.InHeader{})), Opcode: 17, Unique: 42, NodeId: gofuse.FUSE_ROOT_ID}
	if _, err := unix.Write(kernel, unsafe.Slice((*byte)(unsafe.Pointer(&req)), unsafe.Sizeof(req))); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 4096)
	n, err := unix.Read(kernel, buf)
	if err != nil || n < int(unsafe.Sizeof(gofuse.OutHeader{})) {
		t.Fatalf("go-fuse changed: no answer on the swapped-in descriptor (%d bytes, %v): it does not read from the descriptor number it was given", n, err)
	}
	oh := *(*gofuse.OutHeader)(unsafe.Pointer(&buf[0]))
	if oh.Unique != 42 || oh.Status != 0 {
		t.Errorf("answer on the swapped-in descriptor: %+v, want unique 42, status 0", oh)
	}

	// FUSE_NOTIFY_RESEND as notifyResend writes it: an OutHeader with
	// unique 0 and the notification code as status (go-fuse's encoding of
	// its own notifications).
	if err := notifyResend(live); err != nil {
		t.Fatal(err)
	}
	n, err = unix.Read(kernel, buf)
	if err != nil {
		t.Fatal(err)
	}
	want := gofuse.OutHeader{Length: uint32(unsafe.Sizeof(gofuse.OutHeader{})), Status: int32(-gofuse.NOTIFY_RESEND)}
	if !bytes.Equal(buf[:n], unsafe.Slice((*byte)(unsafe.Pointer(&want)), unsafe.Sizeof(want))) {
		t.Errorf("notifyResend wrote %x, want %+v", buf[:n], want)
	}

	_ = unix.Close(kernel) // go-fuse's readers see EOF and Serve returns
	withinTimeout(t, "Serve after the connection ended", func() struct{} { <-served; return struct{}{} })
}

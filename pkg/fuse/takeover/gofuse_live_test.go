package takeover

import (
	"fmt"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	gofuse "github.com/hanwen/go-fuse/v2/fuse"
	"golang.org/x/sys/unix"

	"github.com/basin-csi/basin/internal/testserver"
)

// TestGoFuseTakeoverOnRealConnection is the live part of the go-fuse
// contract (gofuse_contract_test.go): on a real kernel connection, mounted
// as the node plugin mounts (mount(2) with fd=N), go-fuse answers the
// kernel's INIT on /dev/fd/N, the session record written from it is
// accepted by a successor's resumeServer on the same connection, and the
// kernel takes FUSE_NOTIFY_RESEND. The connection keeps serving through
// it all.
func TestGoFuseTakeoverOnRealConnection(t *testing.T) {
	testserver.RequireFUSE(t)
	dir := t.TempDir()
	mnt := filepath.Join(dir, "mnt")
	if err := os.Mkdir(mnt, 0o755); err != nil {
		t.Fatal(err)
	}
	dev, err := os.OpenFile("/dev/fuse", os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = dev.Close() }()
	data := fmt.Sprintf("fd=%d,rootmode=40000,user_id=0,group_id=0,default_permissions", dev.Fd())
	if err := unix.Mount("basin-contract", mnt, "fuse.basin", unix.MS_NOSUID|unix.MS_NODEV, data); err != nil {
		t.Fatalf("mount: %v", err)
	}
	var served []chan struct{}
	defer func() {
		// The unmount ends the connection: every Serve returns.
		if err := unix.Unmount(mnt, unix.MNT_DETACH); err != nil {
			t.Errorf("unmount: %v", err)
		}
		for _, s := range served {
			withinTimeout(t, "Serve after the unmount", func() struct{} { <-s; return struct{}{} })
		}
	}()
	serve := func(srv *gofuse.Server) {
		s := make(chan struct{})
		served = append(served, s)
		go func() { srv.Serve(); close(s) }()
	}
	// dupFD is a descriptor of the connection for one go-fuse server (its
	// *os.File closes it).
	dupFD := func() int {
		fd, err := unix.FcntlInt(dev.Fd(), unix.F_DUPFD_CLOEXEC, 3)
		if err != nil {
			t.Fatal(err)
		}
		return fd
	}
	stat := func(when string) {
		t.Helper()
		var st syscall.Statfs_t
		if err := withinTimeout(t, "statfs "+when, func() error { return syscall.Statfs(mnt, &st) }); err != nil {
			t.Fatalf("statfs %s: %v", when, err)
		}
	}

	first := contractFS(false)
	m := withinTimeout(t, "NewServer on the kernel's INIT", func() made {
		srv, err := gofuse.NewServer(first, fmt.Sprintf("/dev/fd/%d", dupFD()), contractOptions())
		return made{srv, err}
	})
	if m.err != nil {
		t.Fatalf("go-fuse does not answer the kernel's INIT on /dev/fd/N: %v", m.err)
	}
	srv := m.srv
	serve(srv)
	stat("with the first server")
	record := filepath.Join(dir, "fuse-session.json")
	if err := writeSessionRecord(record, "live", srv, first, contractOptions()); err != nil {
		t.Fatal(err)
	}
	rec, err := readSessionRecord(record, "live")
	if err != nil {
		t.Fatal(err)
	}
	if got := int(rec.InitIn[4]); got != opInit {
		t.Errorf("the recorded kernel INIT has opcode %d, want %d", got, opInit)
	}

	live := dupFD()
	defer func() { _ = unix.Close(live) }()
	m = withinTimeout(t, "resumeServer on the live connection", func() made {
		srv, err := resumeServer(contractFS(true), live, rec, contractOptions())
		return made{srv, err}
	})
	if m.err != nil {
		t.Fatalf("a successor does not resume the connection from the record of the kernel's INIT: %v", m.err)
	}
	successor := m.srv
	serve(successor)
	if err := notifyResend(live); err != nil {
		t.Errorf("the kernel refuses FUSE_NOTIFY_RESEND (Linux >= 6.9 needed): %v", err)
	}
	stat("after the takeover")
}

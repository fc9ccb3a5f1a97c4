package supervisor

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	gofs "github.com/hanwen/go-fuse/v2/fs"
	"github.com/hanwen/go-fuse/v2/fuse"

	"github.com/basin-csi/basin/internal/testserver"
	"github.com/basin-csi/basin/pkg/fdholder"
)

// Environment of the checking child process (TestMain).
const (
	checkTargetEnv = "BASIN_TEST_CHECK_TARGET"
	checkSocketEnv = "BASIN_TEST_CHECK_SOCKET"
)

// TestMain runs this binary as the checking process of
// TestCheckLeavesNoThreadInADeadServer when asked: a node plugin that
// checks a mount through the holder and exits.
func TestMain(m *testing.M) {
	if target := os.Getenv(checkTargetEnv); target != "" {
		k := NewLinuxKernel(fdholder.NewClient(os.Getenv(checkSocketEnv)))
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		err := k.Check(ctx, target)
		cancel()
		fmt.Println(err)
		if errors.Is(err, ErrTimeout) {
			os.Exit(0)
		}
		os.Exit(3)
	}
	os.Exit(m.Run())
}

// stuckStatfs is a FUSE root whose statfs is read and not answered until
// release is closed: a server that died with the request in hand, whose
// connection something else keeps open.
type stuckStatfs struct {
	gofs.Inode
	calls   atomic.Int32
	entered chan struct{}
	release chan struct{}
}

var _ gofs.NodeStatfser = (*stuckStatfs)(nil)

func (n *stuckStatfs) Statfs(_ context.Context, out *fuse.StatfsOut) syscall.Errno {
	n.calls.Add(1)
	select {
	case n.entered <- struct{}{}:
	default:
	}
	<-n.release // the kernel's interrupt is not answered either
	out.Bsize, out.Blocks = 4096, 4242
	return 0
}

// A process that asked a FUSE mount for statfs, whose server read the
// request and never answered, must still be able to exit: a node plugin
// that cannot exit blocks the next one, which is what starts the
// successor that answers. Checks go through the descriptor holder, which
// outlives the node plugin, one at a time per connection.
func TestCheckLeavesNoThreadInADeadServer(t *testing.T) {
	testserver.RequireFUSE(t)
	dir, err := os.MkdirTemp("", "probe-") // short: sun_path limit
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	mnt, sock := filepath.Join(dir, "mnt"), filepath.Join(dir, "holder", "holder.sock")
	if err := os.Mkdir(mnt, 0o700); err != nil {
		t.Fatal(err)
	}
	root := &stuckStatfs{entered: make(chan struct{}, 1), release: make(chan struct{})}
	released := false
	release := func() {
		if !released {
			released = true
			close(root.release)
		}
	}
	srv, err := gofs.Mount(mnt, root, &gofs.Options{MountOptions: fuse.MountOptions{
		FsName: "stuck", Name: "basintest", DirectMount: true}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { release(); _ = srv.Unmount() })

	lis, err := fdholder.Listen(sock)
	if err != nil {
		t.Fatal(err)
	}
	holder := fdholder.NewServer()
	ctx, stop := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() { served <- holder.Serve(ctx, lis) }()
	t.Cleanup(func() {
		release()
		stop()
		if err := <-served; err != nil {
			t.Errorf("holder: %v", err)
		}
	})

	// The checking process: it gets no answer and exits.
	cmd := exec.Command(os.Args[0])
	cmd.Env = append(os.Environ(), checkTargetEnv+"="+mnt, checkSocketEnv+"="+sock)
	outFile, err := os.Create(filepath.Join(dir, "out"))
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = outFile.Close() }()
	out := func() string { b, _ := os.ReadFile(outFile.Name()); return string(b) }
	cmd.Stdout, cmd.Stderr = outFile, outFile
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	select {
	case <-root.entered:
	case <-time.After(30 * time.Second):
		t.Fatalf("the FUSE server never got the check's statfs; the checking process said: %s", out())
	}
	select {
	case err := <-exited:
		if err != nil {
			t.Errorf("the checking process: %v, want an exit with ErrTimeout; it said: %s", err, out())
		}
	case <-time.After(60 * time.Second):
		// Without the holder it has a thread in the kernel's wait and
		// never ends: let the server answer so that it can.
		release()
		err := <-exited
		t.Fatalf("the checking process could not exit while the FUSE server held its statfs (then: %v); it said: %s", err, out())
	}

	// A second check of the connection sends no second statfs: it waits
	// for the first one's answer, which does not come within its time.
	k := NewLinuxKernel(fdholder.NewClient(sock))
	cctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
	err = k.Check(cctx, mnt)
	cancel()
	if !errors.Is(err, ErrTimeout) || !errors.Is(err, fdholder.ErrPending) {
		t.Errorf("a check while one is pending = %v, want ErrTimeout wrapping fdholder.ErrPending", err)
	}
	if n := root.calls.Load(); n != 1 {
		t.Errorf("the FUSE server got %d statfs calls, want 1 (one at a time per connection)", n)
	}

	// Once the server answers (as a successor does when the kernel
	// resends the request), checks pass again.
	release()
	var blocks uint64
	for i := 0; ; i++ {
		cctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
		s, err := k.Statfs(cctx, mnt)
		cancel()
		if err == nil {
			blocks = s.Blocks
			break
		}
		if i == 50 {
			t.Fatalf("statfs after the server answered: %v", err)
		}
		time.Sleep(100 * time.Millisecond)
	}
	if blocks != 4242 {
		t.Errorf("statfs through the holder: %d blocks, want the server's 4242", blocks)
	}
	if err := k.Check(t.Context(), mnt); err != nil {
		t.Errorf("Check after the server answered: %v", err)
	}
	// Without a holder, the process asks the mount itself.
	if err := NewLinuxKernel(fdholder.NewClient(filepath.Join(dir, "none.sock"))).Check(t.Context(), mnt); err != nil {
		t.Errorf("Check without a holder: %v", err)
	}
}

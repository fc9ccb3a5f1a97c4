package fdholder

import (
	"errors"
	"os"
	"testing"

	"golang.org/x/sys/unix"
)

func TestStatfsThroughTheHolder(t *testing.T) {
	c, _, _ := serve(t)
	dir := t.TempDir()
	fd, err := unix.Open(dir, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	root := os.NewFile(uintptr(fd), dir)
	defer func() { _ = root.Close() }()
	var want unix.Statfs_t
	if err := unix.Statfs(dir, &want); err != nil {
		t.Fatal(err)
	}
	got, err := c.Statfs(t.Context(), 1, root)
	if err != nil {
		t.Fatalf("Statfs: %v", err)
	}
	if got.Type != want.Type || got.Bsize != want.Bsize || got.Blocks != want.Blocks || got.Fsid != want.Fsid {
		t.Errorf("Statfs through the holder = type %#x bsize %d blocks %d fsid %v; here %#x %d %d %v",
			got.Type, got.Bsize, got.Blocks, got.Fsid, want.Type, want.Bsize, want.Blocks, want.Fsid)
	}
	// The caller keeps its descriptor: it is still open.
	var again unix.Statfs_t
	if err := unix.Fstatfs(int(root.Fd()), &again); err != nil {
		t.Errorf("the caller's descriptor after the call: %v", err)
	}
}

func TestStatfsWithoutAHolderOrDescriptor(t *testing.T) {
	c := NewClient(t.TempDir() + "/none.sock")
	if _, err := c.Statfs(t.Context(), 1, nil); !errors.Is(err, ErrUnavailable) {
		t.Errorf("Statfs without a holder = %v, want ErrUnavailable", err)
	}
	c, _, _ = serve(t)
	if _, err := c.Statfs(t.Context(), 1, nil); err == nil {
		t.Error("Statfs without a descriptor succeeded")
	}
}

func TestStatfsOneAtATimePerConnection(t *testing.T) {
	p := newProbes()
	call := &probeCall{done: make(chan struct{})} // a statfs of device 9 under way
	p.inflight[9] = call
	_, w := pipe(t)
	if rep := p.statfs(request{Op: opStatfs, Entry: Entry{Dev: 9}, WaitMillis: 50}, w, nil); !rep.Pending {
		t.Errorf("a statfs of a connection whose statfs has not returned = %+v, want Pending after its wait", rep)
	}
	if len(p.inflight) != 1 {
		t.Errorf("in flight = %v, want only the first", p.inflight)
	}
	// Once the call under way answers, a request joining it gets its figures.
	call.st.Blocks = 42
	close(call.done)
	_, w2 := pipe(t)
	if rep := p.statfs(request{Op: opStatfs, Entry: Entry{Dev: 9}, WaitMillis: 1000}, w2, nil); rep.Statfs == nil || rep.Statfs.Blocks != 42 {
		t.Errorf("a statfs joining one that answered = %+v, want its figures", rep)
	}
}

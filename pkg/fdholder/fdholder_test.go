package fdholder

import (
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// serve starts a holder on a socket in a temporary directory and returns
// a client, the server and a function that stops it.
func serve(t *testing.T) (*Client, *Server, context.CancelFunc) {
	t.Helper()
	dir, err := os.MkdirTemp("", "fdh-") // short: sun_path limit
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	sock := filepath.Join(dir, "sub", "holder.sock")
	lis, err := Listen(sock)
	if err != nil {
		t.Fatal(err)
	}
	if st, err := os.Stat(sock); err != nil || st.Mode().Perm() != 0o600 {
		t.Fatalf("socket mode: %v %v", st.Mode(), err)
	}
	if st, err := os.Stat(filepath.Dir(sock)); err != nil || st.Mode().Perm() != 0o700 {
		t.Fatalf("socket directory mode: %v %v", st.Mode(), err)
	}
	s := NewServer()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Serve(ctx, lis) }()
	var stopped bool
	stop := func() {
		if stopped {
			return
		}
		stopped = true
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Serve: %v", err)
		}
	}
	t.Cleanup(func() { stop(); s.Close() })
	return NewClient(sock), s, stop
}

// pipe returns a pipe whose write end the test hands around.
func pipe(t *testing.T) (r, w *os.File) {
	t.Helper()
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = r.Close(); _ = w.Close() })
	return r, w
}

// readsEOF reports whether every write end of r's pipe is closed.
func readsEOF(t *testing.T, r *os.File) bool {
	t.Helper()
	_ = r.SetReadDeadline(time.Now().Add(200 * time.Millisecond))
	defer func() { _ = r.SetReadDeadline(time.Time{}) }()
	var b [1]byte
	_, err := r.Read(b[:])
	return errors.Is(err, io.EOF)
}

func TestPutGetDrop(t *testing.T) {
	c, s, _ := serve(t)
	ctx := t.Context()
	r, w := pipe(t)
	e := Entry{VolumeID: "vol-1", Session: "abc", Dev: 77}
	if err := c.Put(ctx, e, w); err != nil {
		t.Fatal(err)
	}
	_ = w.Close() // only the holder's duplicate keeps the pipe open now
	if readsEOF(t, r) {
		t.Fatal("the holder did not keep the descriptor")
	}
	if got := s.Entries(); len(got) != 1 || got[0] != e {
		t.Fatalf("Entries = %+v", got)
	}
	list, err := c.List(ctx)
	if err != nil || len(list) != 1 || list[0] != e {
		t.Fatalf("List = %+v, %v", list, err)
	}

	got, fd, err := c.Get(ctx, "vol-1")
	if err != nil {
		t.Fatal(err)
	}
	if got != e {
		t.Errorf("Get entry = %+v, want %+v", got, e)
	}
	// The returned descriptor is the same pipe.
	if _, err := fd.Write([]byte("x")); err != nil {
		t.Fatal(err)
	}
	_ = fd.Close()
	var b [1]byte
	if _, err := r.Read(b[:]); err != nil || b[0] != 'x' {
		t.Fatalf("read through the returned descriptor: %q %v", b, err)
	}

	if err := c.Drop(ctx, "vol-1"); err != nil {
		t.Fatal(err)
	}
	if !readsEOF(t, r) {
		t.Error("Drop did not close the held descriptor")
	}
	if _, _, err := c.Get(ctx, "vol-1"); !errors.Is(err, ErrNotHeld) {
		t.Errorf("Get after Drop: %v, want ErrNotHeld", err)
	}
	if err := c.Drop(ctx, "vol-1"); err != nil {
		t.Errorf("Drop of nothing: %v", err)
	}
}

func TestPutReplacesAndCloses(t *testing.T) {
	c, _, _ := serve(t)
	ctx := t.Context()
	r1, w1 := pipe(t)
	r2, w2 := pipe(t)
	if err := c.Put(ctx, Entry{VolumeID: "v", Session: "one"}, w1); err != nil {
		t.Fatal(err)
	}
	if err := c.Put(ctx, Entry{VolumeID: "v", Session: "two"}, w2); err != nil {
		t.Fatal(err)
	}
	_ = w1.Close()
	_ = w2.Close()
	if !readsEOF(t, r1) {
		t.Error("the replaced descriptor is still held")
	}
	if readsEOF(t, r2) {
		t.Error("the new descriptor is not held")
	}
	e, fd, err := c.Get(ctx, "v")
	if err != nil {
		t.Fatal(err)
	}
	_ = fd.Close()
	if e.Session != "two" {
		t.Errorf("session = %q, want two", e.Session)
	}
}

func TestBadRequests(t *testing.T) {
	c, _, _ := serve(t)
	ctx := t.Context()
	_, w := pipe(t)
	for name, err := range map[string]error{
		"put without volume":  c.Put(ctx, Entry{}, w),
		"put without fd":      c.Put(ctx, Entry{VolumeID: "v"}, nil),
		"drop without volume": c.Drop(ctx, ""),
	} {
		if err == nil {
			t.Errorf("%s: no error", name)
		}
	}
	if _, err := c.List(ctx); err != nil {
		t.Errorf("the holder stopped serving after bad requests: %v", err)
	}
}

func TestWatchEndsWithTheHolder(t *testing.T) {
	c, _, stop := serve(t)
	inst, gone, err := c.Watch(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if inst == "" {
		t.Error("no instance name")
	}
	select {
	case <-gone:
		t.Fatal("watch ended while the holder runs")
	case <-time.After(100 * time.Millisecond):
	}
	stop()
	select {
	case <-gone:
	case <-time.After(5 * time.Second):
		t.Fatal("watch did not end when the holder stopped")
	}
	if _, err := c.List(t.Context()); err == nil {
		t.Error("List succeeded with no holder")
	}
}

func TestHolderGoneKeepsNothing(t *testing.T) {
	c, s, stop := serve(t)
	r, w := pipe(t)
	if err := c.Put(t.Context(), Entry{VolumeID: "v"}, w); err != nil {
		t.Fatal(err)
	}
	_ = w.Close()
	stop()
	if readsEOF(t, r) {
		t.Fatal("stopping the server released the descriptors")
	}
	s.Close() // what a holder process's exit does
	if !readsEOF(t, r) {
		t.Error("Close kept the descriptor")
	}
}

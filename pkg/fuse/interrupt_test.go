package fuse

import (
	"context"
	"os"
	"runtime"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/basin-csi/basin/pkg/objstore/objstoretest"
)

// TestSignalledChangesRunToTheirEnd: a signal to the calling thread (Go's
// runtime preempts with SIGURG all the time) makes the kernel send an
// interrupt for the request in flight. A change of the bucket must still
// run to its end and report its true outcome, not EINTR after (or before)
// the change was made: syscall.Truncate, unlike os.Truncate, does not
// retry EINTR, and the public conformance suite caught exactly that.
func TestSignalledChangesRunToTheirEnd(t *testing.T) {
	store := objstoretest.NewFake()
	put(t, store, "truncated", []byte("hello"))
	put(t, store, "chmodded", []byte("hello"))
	m := mountStore(t, store, mountSpec{cache: fakeLocal})
	for _, name := range []string{"truncated", "chmodded"} {
		must(t, "stat", func() (os.FileInfo, error) { return os.Stat(path(m, name)) })
	}
	// Every call to the bucket takes long enough for signals to arrive,
	// and gives up as soon as its context is cancelled.
	store.SetHook(func(ctx context.Context, _ objstoretest.Op, _ string) error {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(300 * time.Millisecond):
			return nil
		}
	})
	defer store.SetHook(nil)

	for _, tc := range []struct {
		name string
		call func() error
	}{
		{"stat(2)", func() error { var st unix.Stat_t; return unix.Stat(path(m, "truncated"), &st) }},
		{"truncate(2)", func() error { return unix.Truncate(path(m, "truncated"), 1) }},
		{"chmod(2)", func() error { return unix.Chmod(path(m, "chmodded"), 0o755) }},
		{"mkdir(2)", func() error { return unix.Mkdir(path(m, "dir"), 0o755) }},
		{"symlink(2)", func() error { return unix.Symlink("truncated", path(m, "link")) }},
		{"rename(2)", func() error { return unix.Rename(path(m, "chmodded"), path(m, "renamed")) }},
		{"unlink(2)", func() error { return unix.Unlink(path(m, "link")) }},
	} {
		if err := whileSignalled(t, tc.call); err != nil {
			t.Errorf("%s with signals arriving: %v, want it done", tc.name, err)
		}
	}
	store.SetHook(nil)

	if fi, err := os.Stat(path(m, "truncated")); err != nil || fi.Size() != 1 {
		t.Errorf("after truncate: %v, %v; want size 1", fi, err)
	}
	if info, err := store.Stat(t.Context(), "truncated"); err != nil || info.Size != 1 {
		t.Errorf("the bucket's truncated: %+v, %v; want size 1", info, err)
	}
	if fi, err := os.Stat(path(m, "renamed")); err != nil || fi.Mode().Perm() != 0o755 {
		t.Errorf("after chmod and rename: %v, %v; want mode 0755", fi, err)
	}
	if fi, err := os.Stat(path(m, "dir")); err != nil || !fi.IsDir() {
		t.Errorf("after mkdir: %v, %v; want a directory", fi, err)
	}
	if _, err := os.Lstat(path(m, "link")); !os.IsNotExist(err) {
		t.Errorf("after unlink: %v, want it gone", err)
	}
}

// whileSignalled runs call on a locked OS thread and sends that thread
// SIGURG (which Go's runtime handles and ignores) every 20 ms until call
// returns. It fails the test if call does not return within a minute.
func whileSignalled(t *testing.T, call func() error) error {
	t.Helper()
	tids := make(chan int, 1)
	done := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		tids <- unix.Gettid()
		done <- call()
	}()
	tid := <-tids
	pid := os.Getpid()
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	timeout := time.After(time.Minute)
	for sent := 0; ; {
		select {
		case err := <-done:
			if sent == 0 {
				t.Errorf("no signal was sent while the call ran: the test proves nothing")
			}
			return err
		case <-tick.C:
			if err := unix.Tgkill(pid, tid, unix.SIGURG); err == nil {
				sent++
			}
		case <-timeout:
			t.Fatalf("the call did not return within a minute")
		}
	}
}

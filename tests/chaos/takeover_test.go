package chaos

import (
	"bytes"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/basin-csi/basin/internal/mountdefaults"
	"github.com/basin-csi/basin/pkg/mountspec"
	"github.com/basin-csi/basin/pkg/supervisor"
)

// TestTakeoverCompletesInFlightRead kills the FUSE process while a read is
// waiting in it for the bucket (MinIO frozen with SIGSTOP): the successor
// resumes the kernel connection, the kernel resends the read, and the
// reader gets the right bytes through the file it opened before the kill,
// with no error. The mount is never replaced.
func TestTakeoverCompletesInFlightRead(t *testing.T) {
	r, rd, want, before := openedOnce(t, func(s *mountspec.Spec) { s.ReadOnly = true })
	ev := killDuringRead(t, r, rd, want)
	sameMount(t, r.staging, before)
	t.Logf("heal: %s after %v", ev.Method, ev.Pause)
}

// TestHungProcessIsReplaced freezes the FUSE process (SIGSTOP) while a
// read waits in it: the watchdog's statfs does not come back within the
// check timeout, so the stuck process is killed and a successor takes the
// connection over; the kernel resends the read, which completes with the
// right bytes. The mount is never replaced.
func TestHungProcessIsReplaced(t *testing.T) {
	r, rd, want, before := openedOnce(t, func(s *mountspec.Spec) { s.ReadOnly = true })
	old := r.pid(t)
	if err := syscall.Kill(old, syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = syscall.Kill(old, syscall.SIGCONT) }() // if the watchdog never killed it
	if _, err := rd.stdin.Write([]byte("go\n")); err != nil {
		t.Fatal(err)
	}
	ev := r.waitServing(t, old)
	if ev.Method != "takeover" || ev.Err != "" || !strings.Contains(ev.Cause, "mount check failed") {
		t.Fatalf("heal %+v, want a takeover after a failed check", ev)
	}
	expectRead(t, rd, want, "the read that waited in the hung process")
	sameMount(t, r.staging, before)
	t.Logf("heal: %s after %v (%s)", ev.Method, ev.Pause, ev.Cause)
}

// TestTakeoverKernelOpens is TestTakeoverCompletesInFlightRead on a
// volume whose files the kernel opens itself (openMode kernel): the
// resent read carries no file handle and the successor serves it by
// inode; the kernel's no-open state belongs to the connection, so files
// opened after the takeover read right too.
func TestTakeoverKernelOpens(t *testing.T) {
	r, rd, want, before := openedOnce(t, func(s *mountspec.Spec) { s.ReadOnly, s.OpenMode = true, mountdefaults.OpenKernel })
	killDuringRead(t, r, rd, want)
	for _, key := range slices.Sorted(maps.Keys(r.files)) {
		got, err := os.ReadFile(filepath.Join(r.staging, key))
		if err != nil || !bytes.Equal(got, r.files[key]) {
			t.Errorf("%s after the takeover: %d bytes, %v", key, len(got), err)
		}
	}
	sameMount(t, r.staging, before)
}

// killDuringRead freezes the bucket, lets the once-reader read, kills the
// FUSE process while the read waits in it, and checks that a successor
// took the connection over and the reader got want.
func killDuringRead(t *testing.T, r *rig, rd *reader, want string) supervisor.HealEvent {
	t.Helper()
	if err := r.srv.Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = r.srv.Signal(syscall.SIGCONT) }()
	if _, err := rd.stdin.Write([]byte("go\n")); err != nil {
		t.Fatal(err)
	}
	time.Sleep(700 * time.Millisecond) // the read now waits in the FUSE process for the frozen bucket
	old := r.pid(t)
	if err := syscall.Kill(old, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	if err := r.srv.Signal(syscall.SIGCONT); err != nil {
		t.Fatal(err)
	}
	ev := r.waitServing(t, old)
	if ev.Method != "takeover" || ev.Err != "" {
		t.Fatalf("heal %+v, want a takeover", ev)
	}
	expectRead(t, rd, want, "the read in flight at the kill (no resend?)")
	return ev
}

// expectRead waits up to 30s for a once-reader's result line.
func expectRead(t *testing.T, rd *reader, want, what string) {
	t.Helper()
	got := make(chan string, 1)
	go func() { got <- rd.line(t) }()
	select {
	case line := <-got:
		if line != want {
			t.Fatalf("%s: %q, want %q", what, line, want)
		}
	case <-time.After(30 * time.Second):
		t.Fatalf("%s never completed", what)
	}
}

// sameMount fails the test unless path is still the mount it was.
func sameMount(t *testing.T, path string, before syscall.Stat_t) {
	t.Helper()
	var after syscall.Stat_t
	if err := syscall.Stat(path, &after); err != nil {
		t.Fatal(err)
	}
	if after.Dev != before.Dev {
		t.Errorf("staging device %d → %d: the mount was replaced, not taken over", before.Dev, after.Dev)
	}
}

// openedOnce stages two 3 MiB files and starts a once-reader that has
// opened one of them; it returns the reader's expected result line and
// the staging path's stat from before.
func openedOnce(t *testing.T, edit func(*mountspec.Spec)) (r *rig, rd *reader, want string, before syscall.Stat_t) {
	t.Helper()
	files := randomFiles("data/", 2, 3<<20)
	r = newRigWith(t, files, "1Gi", edit)
	var key string
	for k := range files {
		key = k
		break
	}
	if err := syscall.Stat(r.staging, &before); err != nil {
		t.Fatal(err)
	}
	rd = startReader(t, readerSpec{Dir: r.staging, Files: sums(files), Once: key})
	if got := rd.line(t); got != "open" {
		t.Fatalf("reader: %q", got)
	}
	return r, rd, "ok " + sums(files)[key], before
}

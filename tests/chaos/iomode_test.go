package chaos

import (
	"syscall"
	"testing"
	"time"

	"github.com/basin-csi/basin/pkg/admin"
)

// TestOpenBesideInheritedOpen: a file held open across the takeover (a
// passthrough open of the dead process, the file being fully cached) and
// the same file opened again after it, by another process, both read the
// right bytes: the successor must open it in a mode the kernel accepts
// next to the inherited open. Another fully cached file is served by
// passthrough again after the takeover.
func TestOpenBesideInheritedOpen(t *testing.T) {
	files := randomFiles("data/", 2, 1<<20)
	r := newRig(t, files, "1Gi")
	var key, other string
	for k := range files {
		if key == "" {
			key = k
		} else {
			other = k
		}
	}
	readAll := func(what string, key string) {
		t.Helper()
		want := "ok " + sums(files)[key]
		rd := startReader(t, readerSpec{Dir: r.staging, Files: sums(files), Once: key})
		if got := rd.line(t); got != "open" {
			t.Fatalf("%s: %q", what, got)
		}
		if _, err := rd.stdin.Write([]byte("go\n")); err != nil {
			t.Fatal(err)
		}
		if got := rd.line(t); got != want {
			t.Fatalf("%s: %q, want %q", what, got, want)
		}
	}
	readAll("first read", key) // the files are now fully cached
	readAll("first read", other)
	held := startReader(t, readerSpec{Dir: r.staging, Files: sums(files), Once: key})
	if got := held.line(t); got != "open" {
		t.Fatalf("held open: %q", got)
	}
	old := r.pid(t)
	if err := syscall.Kill(old, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	if ev := r.waitServing(t, old); ev.Method != "takeover" {
		t.Fatalf("heal %+v", ev)
	}
	readAll("open after the takeover", key)
	// The successor's cache may have lost the last index records of the
	// killed process: it refetches them, and once they are recorded an
	// open finds the file fully cached.
	before := passthroughOpens(t, r)
	for i := 0; ; i++ {
		readAll("another file after the takeover", other)
		if passthroughOpens(t, r) > before {
			break
		}
		if i == 20 {
			t.Fatalf("a fully cached file without inherited opens is not served by passthrough after the takeover (%d opens)", i+1)
		}
		time.Sleep(250 * time.Millisecond)
	}
	want := "ok " + sums(files)[key]
	if _, err := held.stdin.Write([]byte("go\n")); err != nil {
		t.Fatal(err)
	}
	expectRead(t, held, want, "the read through the inherited open")
	// And once the inherited open is closed, a new open works too.
	_ = held.stdin.Close()
	time.Sleep(100 * time.Millisecond)
	readAll("open after the inherited one closed", key)
}

// passthroughOpens is the serving process's count of passthrough opens.
func passthroughOpens(t *testing.T, r *rig) float64 {
	t.Helper()
	fams, err := admin.NewClient(admin.SocketPath(r.cache)).Metrics(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	var n float64
	for _, f := range fams {
		if f.GetName() == "basin_fuse_passthrough_opens_total" {
			for _, m := range f.GetMetric() {
				n += m.GetCounter().GetValue()
			}
		}
	}
	return n
}

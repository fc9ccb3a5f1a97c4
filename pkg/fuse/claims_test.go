package fuse

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/basin-csi/basin/pkg/fuse/takeover"
	"github.com/basin-csi/basin/pkg/mountspec"
	"github.com/basin-csi/basin/pkg/objstore"
)

// TestResentExclusiveCreate: a process died after its claim of "mine"
// reached the bucket and before it answered the CREATE (it left a claim
// note, and the empty object). Its successor answers the first exclusive
// create of "mine" that the kernel resent as done, once (one not resent is
// a new creator's: EEXIST); an empty object nobody's note names
// ("theirs") is another creator's: EEXIST. The successor notes the key
// again, with the first note's time, until it answered it (a successor
// killed before the resent CREATE arrives leaves it to the next one); a
// note older than claimNoteAge ("stale") is not carried on.
func TestResentExclusiveCreate(t *testing.T) {
	store, _ := newFileStore(t)
	spec := mountSpec{cfg: Config{Spec: mountspec.Spec{NegativeMetadataTTL: time.Hour}}, cache: realCache}
	backend := newBackend(t, store, spec)
	fsys, err := newFS(spec.cfg, store, backend)
	if err != nil {
		t.Fatal(err)
	}
	fsys.claimLinger = 0 // the notes below are the predecessor's alone
	dir := backend.WritesDir()
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, claimNotePrefix+"1"), []byte("mine"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, claimNotePrefix+"3"), []byte("mine2"), 0o600); err != nil {
		t.Fatal(err)
	}
	noted := time.Now().Add(-time.Minute).Truncate(time.Second)
	for _, n := range []string{"1", "3"} {
		if err := os.Chtimes(filepath.Join(dir, claimNotePrefix+n), noted, noted); err != nil {
			t.Fatal(err)
		}
	}
	stale := filepath.Join(dir, claimNotePrefix+"2")
	if err := os.WriteFile(stale, []byte("stale"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Chtimes(stale, time.Now().Add(-2*claimNoteAge), time.Now().Add(-2*claimNoteAge)); err != nil {
		t.Fatal(err)
	}
	m := mountFS(t, fsys)
	notes := func() map[string]time.Time { return readClaimNotes(dir, noted) }
	if got := notes(); len(got) != 2 || !got["mine"].Equal(noted) || !got["mine2"].Equal(noted) {
		t.Errorf("claim notes after the start: %v; want mine's and mine2's, dated %v as their first note", got, noted)
	}
	// The kernel sent the CREATE because it believed the name missing:
	// give it that negative entry, then the objects appear.
	for _, name := range []string{"mine", "mine2", "theirs", "stale"} {
		if _, err := within(t, "stat", func() (os.FileInfo, error) { return os.Stat(path(m, name)) }); errnoOf(err) != syscall.ENOENT {
			t.Fatalf("stat %s: %v", name, err)
		}
		put(t, store, name, nil)
	}
	var createNew func(name string) error
	create := func(name string) error {
		// As the takeover layer marks a CREATE the kernel resent.
		defer fsys.resending(takeover.OpCreate, name)()
		return createNew(name)
	}
	createNew = func(name string) error {
		_, err := within(t, "create "+name, func() (int, error) {
			f, err := os.OpenFile(path(m, name), os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o644)
			if err != nil {
				return 0, err
			}
			n, err := f.WriteString("by the successor")
			if cerr := f.Close(); err == nil {
				err = cerr
			}
			return n, err
		})
		return err
	}
	if err := createNew("mine2"); errnoOf(err) != syscall.EEXIST {
		t.Errorf("an exclusive create of the predecessor's claim that the kernel did not resend: %v, want EEXIST", err)
	}
	if err := create("mine"); err != nil {
		t.Fatalf("the resent exclusive create of the predecessor's claim: %v, want success", err)
	}
	wantObject(t, store, "mine", []byte("by the successor"))
	if got := notes(); len(got) != 1 || got["mine2"].IsZero() {
		t.Errorf("claim notes after the resent create was answered: %v, want mine2's alone (not resent, not taken)", got)
	}
	if err := create("theirs"); errnoOf(err) != syscall.EEXIST {
		t.Errorf("exclusive create of another creator's empty object: %v, want EEXIST", err)
	}
	if err := create("stale"); errnoOf(err) != syscall.EEXIST {
		t.Errorf("exclusive create of a key whose note is older than %v: %v, want EEXIST", claimNoteAge, err)
	}
	if _, err := within(t, "unlink", func() (struct{}, error) { return struct{}{}, os.Remove(path(m, "mine")) }); err != nil {
		t.Fatal(err)
	}
	if _, err := within(t, "stat", func() (os.FileInfo, error) { return os.Stat(path(m, "mine")) }); errnoOf(err) != syscall.ENOENT {
		t.Fatalf("stat after unlink: %v", err)
	}
	put(t, store, "mine", nil)
	if err := create("mine"); errnoOf(err) != syscall.EEXIST {
		t.Errorf("a second exclusive create of the predecessor's key: %v, want EEXIST (answered as done once)", err)
	}
}

// TestClaimNoteOutlivesTheCreate: the note of a claim stays for
// claimLinger after the CREATE returned, so that a process killed before
// go-fuse sent the reply leaves it to the successor that gets the CREATE
// again.
func TestClaimNoteOutlivesTheCreate(t *testing.T) {
	store, _ := newFileStore(t)
	m, backend := mountLingering(t, store)
	f := must(t, "create", func() (*os.File, error) {
		return os.OpenFile(path(m, "lock"), os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o644)
	})
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	if got := readClaimNotes(backend.WritesDir(), time.Now()); got["lock"].IsZero() {
		t.Errorf("claim notes after the create returned: %v, want lock's (it lingers)", got)
	}
}

// TestLostClaimLeavesNoNote: a claim another creator's object refused
// leaves no note behind it, so a successor that gets the CREATE again
// answers EEXIST instead of taking that object for this process's claim.
func TestLostClaimLeavesNoNote(t *testing.T) {
	store, _ := newFileStore(t)
	m, backend := mountLingering(t, store)
	// The kernel believes "lock" missing; another node then holds it.
	if _, err := within(t, "stat", func() (os.FileInfo, error) { return os.Stat(path(m, "lock")) }); errnoOf(err) != syscall.ENOENT {
		t.Fatalf("stat lock: %v", err)
	}
	put(t, store, "lock", nil)
	_, err := within(t, "create", func() (*os.File, error) {
		return os.OpenFile(path(m, "lock"), os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o644)
	})
	if errnoOf(err) != syscall.EEXIST {
		t.Fatalf("exclusive create of another node's lock: %v, want EEXIST", err)
	}
	if got := readClaimNotes(backend.WritesDir(), time.Now()); !got["lock"].IsZero() {
		t.Errorf("claim notes after the claim was lost: %v, want none for lock", got)
	}
}

// mountLingering mounts store on a real cache whose claim notes linger an
// hour after their CREATE (set before the mount: request goroutines read
// it), with an hour's negative TTL.
func mountLingering(t *testing.T, store objstore.Store) (*testMount, cacheBackend) {
	t.Helper()
	spec := mountSpec{cfg: Config{Spec: mountspec.Spec{NegativeMetadataTTL: time.Hour}}, cache: realCache}
	backend := newBackend(t, store, spec)
	fsys, err := newFS(spec.cfg, store, backend)
	if err != nil {
		t.Fatal(err)
	}
	fsys.claimLinger = time.Hour
	return mountFS(t, fsys), backend
}

package fuse

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// stage makes a staged file of ino through s with content, as a write
// state does, and returns its name.
func stage(t *testing.T, s *stagedWrites, ino uint64, content string) string {
	t.Helper()
	f, err := s.create(ino)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteString(content); err != nil {
		t.Fatal(err)
	}
	_ = f.Close()
	return f.Name()
}

// names lists dir's entry names in order, within the harness's timeout
// (dir may be in a mount).
func names(t *testing.T, dir string) []string {
	t.Helper()
	entries := must(t, "readdir "+dir, func() ([]os.DirEntry, error) { return os.ReadDir(dir) })
	var out []string
	for _, e := range entries {
		out = append(out, e.Name())
	}
	return out
}

func TestStagedWritesFreshStartRemovesAll(t *testing.T) {
	dir := t.TempDir()
	prev := newStagedWrites(dir)
	stage(t, prev, 5, "abc")
	part, err := prev.createPart(6)
	if err != nil {
		t.Fatal(err)
	}
	_ = part.Close()
	s := newStagedWrites(dir)
	if _, err := s.scan(func(uint64) bool { return false }); err != nil {
		t.Fatal(err)
	}
	if left := names(t, dir); len(left) != 0 {
		t.Errorf("a fresh connection left %v", left)
	}
	if _, ok := s.take(5); ok {
		t.Error("a fresh connection adopts a staged file")
	}
}

func TestStagedWritesResumeAdoptsNewestOfInheritedInodes(t *testing.T) {
	dir := t.TempDir()
	prev := newStagedWrites(dir)
	older := stage(t, prev, 5, "finishing upload")
	newer := stage(t, prev, 5, "the live writer's")
	orphan := stage(t, prev, 7, "no open file left")
	part, err := prev.createPart(5)
	if err != nil {
		t.Fatal(err)
	}
	_ = part.Close()

	s := newStagedWrites(dir)
	if _, err := s.scan(func(ino uint64) bool { return ino == 5 }); err != nil {
		t.Fatal(err)
	}
	if left := names(t, dir); !slices.Equal(left, []string{filepath.Base(newer)}) {
		t.Errorf("after the scan: %v, want only %s (not %s, %s or the partial copy)", left, filepath.Base(newer), filepath.Base(older), filepath.Base(orphan))
	}
	if size, ok := s.size(5); !ok || size != int64(len("the live writer's")) {
		t.Errorf("size(5) = %d, %v", size, ok)
	}
	p, ok := s.take(5)
	if !ok || p != newer {
		t.Fatalf("take(5) = %q, %v; want %q", p, ok, newer)
	}
	if _, ok := s.take(5); ok {
		t.Error("a staged file adopted twice")
	}
	// A new staged file of the adopted inode sorts after the predecessor's.
	next := stage(t, s, 5, "x")
	_, g1, _ := parseName(filepath.Base(newer))
	_, g2, _ := parseName(filepath.Base(next))
	if g2 <= g1 {
		t.Errorf("generation of %s is not above %s", next, newer)
	}
}

func TestStagedWritesDropRemovesUnadopted(t *testing.T) {
	dir := t.TempDir()
	prev := newStagedWrites(dir)
	p := stage(t, prev, 5, "a")
	s := newStagedWrites(dir)
	if _, err := s.scan(func(uint64) bool { return true }); err != nil {
		t.Fatal(err)
	}
	s.drop(5)
	if _, err := os.Stat(p); !os.IsNotExist(err) {
		t.Errorf("staged file of a dropped inode: %v", err)
	}
	if _, ok := s.take(5); ok {
		t.Error("a dropped staged file is adoptable")
	}
}

// TestStagedWritesAcknowledgedAreReturned: the scan returns an inode's
// newest staged file with a note, inherited or not, and never offers it
// for adoption; an unacknowledged newer file, an older acknowledged one
// and notes without their file are handled as the rules say.
func TestStagedWritesAcknowledgedAreReturned(t *testing.T) {
	dir := t.TempDir()
	prev := newStagedWrites(dir)
	note := func(path, key string, size int64) {
		t.Helper()
		if _, err := writeAck(path, ackNote{Key: key, Size: size, Meta: map[string]string{"mode": "0755"}}); err != nil {
			t.Fatal(err)
		}
	}
	a := stage(t, prev, 5, "closed") // acknowledged, its inode not inherited
	note(a, "dir/a", 6)
	b := stage(t, prev, 6, "closed too") // acknowledged, its inode inherited
	note(b, "b", 10)
	oldC := stage(t, prev, 7, "closed once")
	note(oldC, "c", 11)
	newC := stage(t, prev, 7, "rewritten, not closed") // newest wins: not acknowledged
	stray := filepath.Join(dir, "9.1"+ackSuffix)       // a note whose file is gone
	if err := os.WriteFile(stray, []byte(`{"key":"x","size":1}`), 0o600); err != nil {
		t.Fatal(err)
	}

	s := newStagedWrites(dir)
	acked, err := s.scan(func(ino uint64) bool { return ino == 6 || ino == 7 })
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]ackNote{}
	for _, f := range acked {
		got[f.path] = f.note
	}
	if len(got) != 2 || got[a].Key != "dir/a" || got[a].Size != 6 || got[b].Key != "b" || got[a].Meta["mode"] != "0755" {
		t.Errorf("acknowledged files %v, want %s (dir/a) and %s (b)", got, a, b)
	}
	for _, ino := range []uint64{5, 6} {
		if _, ok := s.take(ino); ok {
			t.Errorf("acknowledged staged file of %d offered for adoption", ino)
		}
	}
	if p, ok := s.take(7); !ok || p != newC {
		t.Errorf("take(7) = %q, %v; want the newest, unacknowledged %q", p, ok, newC)
	}
	want := []string{filepath.Base(a), filepath.Base(a) + ackSuffix, filepath.Base(b), filepath.Base(b) + ackSuffix, filepath.Base(newC)}
	slices.Sort(want)
	if left := names(t, dir); !slices.Equal(left, want) {
		t.Errorf("after the scan: %v, want %v", left, want)
	}
}

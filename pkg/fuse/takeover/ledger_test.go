package takeover

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	gofuse "github.com/hanwen/go-fuse/v2/fuse"
	"k8s.io/klog/v2"
)

func TestLedgerCarriesOpenModesToASuccessor(t *testing.T) {
	dir := t.TempDir()
	session := filepath.Join(dir, "fuse-session.json")
	path := ledgerPath(session, "abc")
	if err := os.WriteFile(filepath.Join(dir, "fuse-iomodes-old.log"), []byte("stale"), 0o600); err != nil {
		t.Fatal(err)
	}

	// The first process: ino 10 open twice in passthrough (backing 5), ino
	// 11 once with the page cache, ino 12 in direct I/O, ino 13 opened and
	// closed.
	first := &rawStub{RawFileSystem: gofuse.NewDefaultRawFileSystem()}
	s1, _ := newTestFS(t, first, false)
	l1, inherited, err := openLedger(path, false, klog.Background())
	if err != nil || len(inherited) != 0 {
		t.Fatalf("fresh ledger: %v %v", inherited, err)
	}
	s1.ledger = l1
	if _, err := os.Stat(filepath.Join(dir, "fuse-iomodes-old.log")); !os.IsNotExist(err) {
		t.Errorf("a fresh connection kept an earlier connection's ledger: %v", err)
	}
	first.next = gofuse.FOPEN_PASSTHROUGH
	for range 2 {
		var out gofuse.OpenOut
		in := &gofuse.OpenIn{InHeader: gofuse.InHeader{NodeId: 10}}
		s1.RawFileSystem.(*rawStub).Open(nil, in, &out)
		out.BackingID = 5
		if st := s1.opened(nil, gofuse.OK, &in.InHeader, 10, 0, &out, true); !st.Ok() {
			t.Fatal(st)
		}
	}
	first.next = 0
	if _, st := open(t, s1, 11, 0); !st.Ok() {
		t.Fatal(st)
	}
	first.next = gofuse.FOPEN_DIRECT_IO
	if _, st := open(t, s1, 12, 0); !st.Ok() {
		t.Fatal(st)
	}
	first.next = 0
	out13, _ := open(t, s1, 13, 0)
	release(s1, 13, out13.Fh)
	_ = l1.Close() // the process dies

	// The successor replays it.
	second := &rawStub{RawFileSystem: gofuse.NewDefaultRawFileSystem()}
	s2, hooks := newTestFS(t, second, true)
	l2, inherited, err := openLedger(path, true, klog.Background())
	if err != nil {
		t.Fatal(err)
	}
	s2.ledger = l2
	s2.inherit(inherited)
	var unregistered []int32
	s2.unregister = func(id int32) { unregistered = append(unregistered, id) }
	want := map[uint64]ioCount{10: {pt: 2, backing: 5}, 11: {cached: 1}}
	if len(inherited) != len(want) || inherited[10] != want[10] || inherited[11] != want[11] {
		t.Fatalf("inherited %+v, want %+v", inherited, want)
	}
	if !s2.pinned(10) || !s2.pinned(11) || s2.pinned(12) || s2.pinned(13) {
		t.Error("wrong inodes pinned")
	}

	// A reader of ino 10 gets the inherited backing file, whatever the
	// file system chose; a writer is refused and its open undone.
	second.next = gofuse.FOPEN_KEEP_CACHE
	out, st := open(t, s2, 10, 0)
	if !st.Ok() || out.OpenFlags&gofuse.FOPEN_PASSTHROUGH == 0 || out.OpenFlags&gofuse.FOPEN_KEEP_CACHE != 0 || out.BackingID != 5 {
		t.Fatalf("open of a pinned inode: %+v %v", out, st)
	}
	if _, st := open(t, s2, 10, syscall.O_RDWR); st != gofuse.Status(syscall.ETXTBSY) {
		t.Errorf("writer of an inode pinned to passthrough: %v, want ETXTBSY", st)
	}
	if len(second.released) != 1 || second.released[0] != 7 {
		t.Errorf("refused writer's open not undone: releases %v", second.released)
	}
	// The two inherited handles and ours go; the last lets the inode and
	// its backing ID go.
	inheritedFh := s1.epoch | uint64(modePassthrough)<<fhModeShift | 7
	release(s2, 10, inheritedFh)
	release(s2, 10, inheritedFh+1)
	if !s2.pinned(10) || len(unregistered) != 0 || len(hooks.orphaned) != 0 {
		t.Fatal("unpinned while our own open is still there")
	}
	release(s2, 10, out.Fh)
	if s2.pinned(10) || len(unregistered) != 1 || unregistered[0] != 5 {
		t.Errorf("after the last release: pinned %v, unregistered %v", s2.pinned(10), unregistered)
	}
	if len(hooks.orphaned) != 1 || hooks.orphaned[0] != 10 {
		t.Errorf("the file system was told %v orphaned, want [10]", hooks.orphaned)
	}
	_ = l2.Close()

	// What is left for a third process: ino 11 only.
	l3, left, err := openLedger(path, true, klog.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = l3.Close() }()
	if len(left) != 1 || left[11] != (ioCount{cached: 1}) {
		t.Errorf("left for the next process: %+v", left)
	}
	if st, err := os.Stat(path); err != nil || st.Mode().Perm() != 0o600 {
		t.Errorf("ledger file: %v %v", st, err)
	}
}

// openU and releaseU are open and release with the request's unique.
func openU(t *testing.T, s *sessionFS, ino, unique uint64) gofuse.OpenOut {
	t.Helper()
	var out gofuse.OpenOut
	if st := s.Open(nil, &gofuse.OpenIn{InHeader: gofuse.InHeader{NodeId: ino, Unique: unique}}, &out); !st.Ok() {
		t.Fatal(st)
	}
	return out
}

func releaseU(s *sessionFS, ino, fh, unique uint64) {
	s.Release(nil, &gofuse.ReleaseIn{InHeader: gofuse.InHeader{NodeId: ino, Unique: unique}, Fh: fh})
}

// successor opens the ledger at path as the next process would.
func successor(t *testing.T, path string) (*sessionFS, map[uint64]ioCount) {
	t.Helper()
	s, _ := newTestFS(t, &rawStub{RawFileSystem: gofuse.NewDefaultRawFileSystem()}, true)
	l, inherited, err := openLedger(path, true, klog.Background())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = l.Close() })
	s.ledger = l
	s.inherit(inherited)
	return s, inherited
}

// A process killed after recording an open or a release but before its
// reply reached the kernel: the kernel resends the request (its unique
// with resendBit) to the successor, which must count it once. A release
// counted twice unpinned an inode the kernel still had open (the next
// open in the other mode then failed with EIO, as make chaos saw once); an
// open counted twice pinned its inode for good.
func TestLedgerCountsResentRequestsOnce(t *testing.T) {
	dir := t.TempDir()
	path := ledgerPath(filepath.Join(dir, "fuse-session.json"), "abc")
	s1, _ := newTestFS(t, &rawStub{RawFileSystem: gofuse.NewDefaultRawFileSystem()}, false)
	l1, _, err := openLedger(path, false, klog.Background())
	if err != nil {
		t.Fatal(err)
	}
	s1.ledger = l1
	// Ino 20: A open and answered, C opened and its release recorded but
	// not answered. Ino 21: D answered, the open of B recorded but not
	// answered.
	openU(t, s1, 20, 100)       // A
	c := openU(t, s1, 20, 104)  // C
	releaseU(s1, 20, c.Fh, 106) // C's release, unanswered
	d := openU(t, s1, 21, 110)  // D
	openU(t, s1, 21, 112)       // B, unanswered
	_ = l1.Close()

	s2, inherited := successor(t, path)
	if inherited[20] != (ioCount{cached: 1}) || inherited[21] != (ioCount{cached: 2}) {
		t.Fatalf("inherited %+v", inherited)
	}
	b := openU(t, s2, 21, 112|resendBit) // B again: the same open
	releaseU(s2, 20, c.Fh, 106|resendBit)
	if !s2.pinned(20) {
		t.Fatal("ino 20 unpinned by a resent release while A is still open")
	}
	_ = s2.ledger.Close() // s2 dies before answering the resent release

	// A third process gets the release once more: still not counted.
	s3, inherited := successor(t, path)
	if inherited[20] != (ioCount{cached: 1}) || inherited[21] != (ioCount{cached: 2}) {
		t.Fatalf("third process inherited %+v", inherited)
	}
	releaseU(s3, 20, c.Fh, 106|resendBit)
	if !s3.pinned(20) {
		t.Fatal("ino 20 unpinned by a release resent twice")
	}
	releaseU(s3, 20, s1.epoch|uint64(modeCached)<<fhModeShift|7, 120) // A
	if s3.pinned(20) {
		t.Error("ino 20 still pinned after A's release")
	}
	releaseU(s3, 21, d.Fh, 122)
	releaseU(s3, 21, b.Fh, 124)
	if s3.pinned(21) {
		t.Error("ino 21 still pinned after the release of both its opens: the resent open was counted twice")
	}
}

// A ledger written before records carried uniques is replayed.
func TestLegacyLedgerReplayed(t *testing.T) {
	dir := t.TempDir()
	path := ledgerPath(filepath.Join(dir, "fuse-session.json"), "abc")
	var buf []byte
	for _, r := range []struct {
		ino     uint64
		op      byte
		mode    ioMode
		backing int32
	}{{10, 1, modePassthrough, 5}, {10, 1, modePassthrough, 5}, {11, 1, modeCached, 0}, {12, 1, modeCached, 0}, {12, 2, modeCached, 0}} {
		buf = appendRecord(buf, r.ino, r.op, r.mode, r.backing, 0)[:len(buf)+legacyRecordSize]
	}
	if err := os.WriteFile(legacyLedgerPath(path), buf, 0o600); err != nil {
		t.Fatal(err)
	}
	_, inherited := successor(t, path)
	want := map[uint64]ioCount{10: {pt: 2, backing: 5}, 11: {cached: 1}}
	if len(inherited) != len(want) || inherited[10] != want[10] || inherited[11] != want[11] {
		t.Errorf("inherited %+v, want %+v", inherited, want)
	}
}

// TestWriterWaitsForInheritedRelease: a writer's open of an inode pinned
// to passthrough waits for the inherited open's RELEASE (asynchronous:
// the program closed its reader just before) and then succeeds.
func TestWriterWaitsForInheritedRelease(t *testing.T) {
	predecessor, _ := newTestFS(t, &rawStub{RawFileSystem: gofuse.NewDefaultRawFileSystem()}, false)
	inner := &rawStub{RawFileSystem: gofuse.NewDefaultRawFileSystem()}
	s, _ := newTestFS(t, inner, true)
	s.inherit(map[uint64]ioCount{10: {pt: 1, backing: 5}})
	s.unregister = func(int32) {}
	inheritedFh := predecessor.epoch | uint64(modePassthrough)<<fhModeShift | 7
	go func() {
		time.Sleep(100 * time.Millisecond)
		release(s, 10, inheritedFh)
	}()
	if _, st := open(t, s, 10, syscall.O_WRONLY|syscall.O_APPEND); !st.Ok() {
		t.Fatalf("writer after the inherited reader's release: %v, want it opened", st)
	}
	if s.pinned(10) {
		t.Error("still pinned after the inherited release")
	}
}

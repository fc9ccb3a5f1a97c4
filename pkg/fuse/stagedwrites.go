package fuse

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"k8s.io/klog/v2"
)

// Files being written live in the cache's WritesDir, one per write state,
// named "<ino>.<generation>": the inode number and a number that grows
// with every new staged file (a state finishing its upload and the next
// writer's state of the same inode may both have one for a moment). The
// rule that makes them adoptable by a process taking the connection over:
//
//	an inode's staged file exists from before the first change a writer
//	was told succeeded until its write state finishes (uploaded and
//	installed into the cache, or removed), and it always holds the whole
//	current content.
//
// A copy-down goes to a temporary ".<ino>-*.part" file renamed into place
// once complete; the file of one unlinked while open is removed at once.
// So a successor that finds staged files of an inode with inherited open
// files adopts the newest as the content written so far; when it finds
// none, no change was ever acknowledged and the writer continues from the
// object in the bucket. The
// kernel resends the requests the dead process never answered, so no
// acknowledged write is lost with the process (page-cache writes survive
// it); a node crash loses the staged files, but then the bucket still
// holds the old version, as no upload of the new one completed.
type stagedWrites struct {
	dir string // constant
	gen atomic.Uint64

	pending atomic.Int32 // len(adoptable): the fast path skips the lock
	mu      sync.Mutex
	// guarded by mu: files a dead predecessor left for its open files
	adoptable map[uint64]string
}

func newStagedWrites(dir string) *stagedWrites {
	s := &stagedWrites{dir: dir, adoptable: map[uint64]string{}}
	s.gen.Store(uint64(time.Now().UnixNano())) // above any predecessor's
	return s
}

// newPath names a new staged file of inode ino.
func (s *stagedWrites) newPath(ino uint64) string {
	return filepath.Join(s.dir, stagedName(ino, s.gen.Add(1)))
}

// parseName returns the inode and generation of a staged file's name.
func parseName(name string) (ino, gen uint64, ok bool) {
	a, b, found := strings.Cut(name, ".")
	if !found {
		return 0, 0, false
	}
	ino, err1 := strconv.ParseUint(a, 10, 64)
	gen, err2 := strconv.ParseUint(b, 10, 64)
	return ino, gen, err1 == nil && err2 == nil
}

// ackedFile is a staged file whose close was acknowledged (stagedack.go).
type ackedFile struct {
	path string
	note ackNote
}

// scan runs once before serving. Partial copies are removed, and so are
// the staged files of inodes no predecessor may still have open
// (inherited; in a fresh connection none: their writers' connection is
// gone, and each of them got an error from it); the others are kept for
// adoption. An inode's newest staged file with a matching
// acknowledgement note is neither: it is returned, to be uploaded
// (stagedack.go); older files of the inode and notes of other files are
// removed.
func (s *stagedWrites) scan(inherited func(ino uint64) bool) ([]ackedFile, error) {
	entries, err := os.ReadDir(s.dir)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("fuse: staged writes: %w", err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	acks := map[string]bool{}     // staged file names with a note
	newest := map[uint64]uint64{} // ino → generation of its newest staged file
	var remove []string
	for _, e := range entries {
		name := e.Name()
		if staged, ok := isAckName(name); ok && e.Type().IsRegular() {
			acks[staged] = true
			continue
		}
		ino, gen, ok := parseName(name)
		if !ok || !e.Type().IsRegular() {
			remove = append(remove, name)
			continue
		}
		if old, seen := newest[ino]; seen {
			if old > gen {
				remove = append(remove, name)
				continue
			}
			remove = append(remove, stagedName(ino, old))
		}
		newest[ino] = gen
	}
	var acked []ackedFile
	for ino, gen := range newest {
		name := stagedName(ino, gen)
		path := filepath.Join(s.dir, name)
		if acks[name] {
			delete(acks, name)
			note, err := readAck(path + ackSuffix)
			if err == nil {
				acked = append(acked, ackedFile{path: path, note: note})
				continue
			}
			klog.ErrorS(err, "an unreadable acknowledgement note; the staged file counts as not acknowledged", "path", path)
			remove = append(remove, name+ackSuffix)
		}
		if !inherited(ino) {
			remove = append(remove, name)
			continue
		}
		s.adoptable[ino] = path
	}
	for name := range acks {
		remove = append(remove, name+ackSuffix) // of a file removed above, or gone
	}
	for _, name := range remove {
		if err := os.Remove(filepath.Join(s.dir, name)); err != nil && !errors.Is(err, os.ErrNotExist) {
			return nil, fmt.Errorf("fuse: staged writes: %w", err)
		}
	}
	s.pending.Store(int32(len(s.adoptable)))
	if len(s.adoptable) > 0 {
		klog.InfoS("adopting files being written by the previous process", "files", len(s.adoptable))
	}
	return acked, nil
}

// stagedName is the name of the staged file of ino of generation gen.
func stagedName(ino, gen uint64) string {
	return strconv.FormatUint(ino, 10) + "." + strconv.FormatUint(gen, 10)
}

// take hands the staged file of ino to its adopter, once.
func (s *stagedWrites) take(ino uint64) (string, bool) {
	if s.pending.Load() == 0 {
		return "", false
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	p, ok := s.adoptable[ino]
	if ok {
		delete(s.adoptable, ino)
		s.pending.Add(-1)
	}
	return p, ok
}

// size is the size of the staged file of ino while it waits for adoption.
func (s *stagedWrites) size(ino uint64) (int64, bool) {
	if s.pending.Load() == 0 {
		return 0, false
	}
	s.mu.Lock()
	p, ok := s.adoptable[ino]
	s.mu.Unlock()
	if !ok {
		return 0, false
	}
	fi, err := os.Stat(p)
	if err != nil {
		return 0, false
	}
	return fi.Size(), true
}

// drop removes the staged file of ino if nobody adopted it: the last
// inherited open file of ino is gone without using it (its writer's
// close was answered by the predecessor).
func (s *stagedWrites) drop(ino uint64) {
	p, ok := s.take(ino)
	if !ok {
		return
	}
	if err := os.Remove(p); err != nil && !errors.Is(err, os.ErrNotExist) {
		klog.ErrorS(err, "removing an unadopted staged write", "path", p)
	}
}

// create starts an empty staged file for ino.
func (s *stagedWrites) create(ino uint64) (*os.File, error) {
	f, err := os.OpenFile(s.newPath(ino), os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return nil, fmt.Errorf("create staged file: %w", err)
	}
	return f, nil
}

// createPart starts a temporary file for a copy-down of ino; commit
// renames it into place once the content is complete.
func (s *stagedWrites) createPart(ino uint64) (*os.File, error) {
	f, err := os.CreateTemp(s.dir, "."+strconv.FormatUint(ino, 10)+"-*.part")
	if err != nil {
		return nil, fmt.Errorf("create staged file: %w", err)
	}
	return f, nil
}

// commit makes a complete temporary file the staged file of ino and
// returns its name.
func (s *stagedWrites) commit(ino uint64, f *os.File) (string, error) {
	path := s.newPath(ino)
	if err := os.Rename(f.Name(), path); err != nil {
		return "", fmt.Errorf("staged file: %w", err)
	}
	return path, nil
}

// retire removes the staged file at path of a file unlinked while open,
// so that a later file of the same name (and inode) never meets it; the
// open descriptor keeps the content for the handles that remain.
func (s *stagedWrites) retire(path string) {
	if err := os.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
		klog.ErrorS(err, "removing the staged file of an unlinked file", "path", path)
	}
}

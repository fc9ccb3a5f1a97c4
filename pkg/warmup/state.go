package warmup

import (
	"bufio"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/basin-csi/basin/internal/atomicfile"
)

// The state file is text, one record per line:
//
//	basin-warmup 1 <mode> <sha256 of the sorted absolute paths>
//	d <files> <bytes> "<directory>"           every file directly in it is warm
//	f <size> <mtime ns> "<file>"               this file (as it was then) is warm
//
// Paths are absolute and quoted with strconv.Quote. A header for other
// paths or another mode makes the run start over. Records are appended as
// the run goes (buffered, flushed every progress tick), so a crash loses
// the last second at most; loading rewrites the file compacted.

const stateMagic = "basin-warmup 1"

// fileKey identifies a version of a file.
type fileKey struct{ size, mtime int64 }

// dirRecord is a warm directory's direct files.
type dirRecord struct{ files, bytes int64 }

// state is the loaded state file and its writer.
type state struct {
	// constant
	path string

	// loaded records; read-only after load
	dirs  map[string]dirRecord
	files map[string]fileKey

	mu sync.Mutex // guards w, f, err
	f  *os.File
	w  *bufio.Writer
	// err is the first write error; later records are dropped.
	err error
}

// header is the first line for paths and mode.
func header(paths []string, mode string) string {
	sorted := slices.Clone(paths)
	slices.Sort(sorted)
	sum := sha256.Sum256([]byte(strings.Join(sorted, "\x00")))
	return stateMagic + " " + mode + " " + hex.EncodeToString(sum[:])
}

// openState loads path (unless restart) when its header matches, rewrites
// it compacted and opens it for appending. note says why earlier records
// were not used, if there were any.
func openState(path string, paths []string, mode string, restart bool) (s *state, note string, err error) {
	s = &state{path: path, dirs: map[string]dirRecord{}, files: map[string]fileKey{}}
	want := header(paths, mode)
	if !restart {
		switch got, err := s.load(want); {
		case errors.Is(err, fs.ErrNotExist):
		case err != nil:
			return nil, "", err
		case got != want:
			note = fmt.Sprintf("state file %s is for other paths or another mode: starting over", path)
			s.dirs, s.files = map[string]dirRecord{}, map[string]fileKey{}
		}
	}
	if err := s.rewrite(want); err != nil {
		return nil, "", err
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		return nil, "", fmt.Errorf("warmup: state file: %w", err)
	}
	s.f, s.w = f, bufio.NewWriter(f)
	return s, note, nil
}

// load reads the records and returns the file's header line.
func (s *state) load(want string) (string, error) {
	f, err := os.Open(s.path)
	if err != nil {
		return "", err
	}
	defer func() { _ = f.Close() }()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	if !sc.Scan() {
		return "", sc.Err()
	}
	head := sc.Text()
	if head != want {
		return head, nil
	}
	for sc.Scan() {
		s.parse(sc.Text()) // a torn last line (crash) is ignored
	}
	if err := sc.Err(); err != nil {
		return "", fmt.Errorf("warmup: read state file %s: %w", s.path, err)
	}
	return head, nil
}

// parse reads one record line; malformed lines are ignored.
func (s *state) parse(line string) {
	kind, rest, _ := strings.Cut(line, " ")
	a, rest, _ := strings.Cut(rest, " ")
	b, quoted, _ := strings.Cut(rest, " ")
	x, err1 := strconv.ParseInt(a, 10, 64)
	y, err2 := strconv.ParseInt(b, 10, 64)
	p, err3 := strconv.Unquote(quoted)
	if err1 != nil || err2 != nil || err3 != nil {
		return
	}
	switch kind {
	case "d":
		s.dirs[p] = dirRecord{files: x, bytes: y}
	case "f":
		s.files[p] = fileKey{size: x, mtime: y}
	}
}

// rewrite replaces the file with the header and the loaded records,
// leaving out files of warm directories.
func (s *state) rewrite(head string) error {
	if err := os.MkdirAll(filepath.Dir(s.path), 0o700); err != nil {
		return fmt.Errorf("warmup: state directory: %w", err)
	}
	err := atomicfile.Write(s.path, 0o600, atomicfile.Durable, func(w io.Writer) error {
		if _, err := fmt.Fprintln(w, head); err != nil {
			return err
		}
		for _, d := range slices.Sorted(maps.Keys(s.dirs)) {
			r := s.dirs[d]
			if _, err := fmt.Fprintf(w, "d %d %d %s\n", r.files, r.bytes, strconv.Quote(d)); err != nil {
				return err
			}
		}
		for _, p := range slices.Sorted(maps.Keys(s.files)) {
			if _, warm := s.dirs[filepath.Dir(p)]; warm {
				delete(s.files, p)
				continue
			}
			k := s.files[p]
			if _, err := fmt.Fprintf(w, "f %d %d %s\n", k.size, k.mtime, strconv.Quote(p)); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("warmup: state file: %w", err)
	}
	return nil
}

// warmDir returns a directory's record if an earlier run warmed it.
func (s *state) warmDir(dir string) (dirRecord, bool) {
	r, ok := s.dirs[dir]
	return r, ok
}

// warmFile reports whether an earlier run warmed this version of a file.
func (s *state) warmFile(path string, k fileKey) bool {
	old, ok := s.files[path]
	return ok && old == k
}

// recordFile and recordDir append records.
func (s *state) recordFile(path string, k fileKey) {
	s.append(fmt.Sprintf("f %d %d %s\n", k.size, k.mtime, strconv.Quote(path)))
}

func (s *state) recordDir(dir string, r dirRecord) {
	s.append(fmt.Sprintf("d %d %d %s\n", r.files, r.bytes, strconv.Quote(dir)))
}

func (s *state) append(line string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.err == nil {
		_, s.err = s.w.WriteString(line)
	}
}

// flush writes buffered records out.
func (s *state) flush() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.err == nil {
		s.err = s.w.Flush()
	}
	return s.err
}

// close flushes, syncs and closes the file; remove deletes it after.
func (s *state) close(remove bool) error {
	err := s.flush()
	if serr := s.f.Sync(); err == nil {
		err = serr
	}
	if cerr := s.f.Close(); err == nil {
		err = cerr
	}
	if remove {
		if rerr := os.Remove(s.path); rerr != nil && err == nil {
			err = rerr
		}
	}
	if err != nil {
		return fmt.Errorf("warmup: state file %s: %w", s.path, err)
	}
	return nil
}

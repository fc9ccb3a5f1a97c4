package chaos

import (
	"bufio"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"
)

// The readers run in a child process (this test binary re-executed with
// BASIN_CHAOS_READER set), as a pod's would: the test process supervises
// the FUSE processes and must never wait on its own mount itself, or a
// fork of a successor could wait behind that read.

const readerEnv = "BASIN_CHAOS_READER"

// readerSpec is what a reader child does; the parent passes it as JSON.
type readerSpec struct {
	Dir     string            `json:"dir"`
	Files   map[string]string `json:"files"` // name → sha256 hex
	Threads int               `json:"threads"`
	Once    string            `json:"once"` // open this file, wait for a line on stdin, read it, report
	// Listers list each directory of Files in a loop; a listing missing
	// a name of Files is an error.
	Listers int `json:"listers"`
	// Summary: report workerStats lines (every few seconds and at the
	// end) instead of every operation (a soak's hour of reads).
	Summary bool `json:"summary"`
}

// opRecord is one read operation of a loop reader.
type opRecord struct {
	Start, End int64 // unix nanoseconds
	Err        string
}

// readerReport is the loop reader's final output.
type readerReport struct {
	Ops    []opRecord
	Errors []string
	Bytes  int64
}

// runReaderChild is the child's main; it returns the exit code.
func runReaderChild(specJSON string) int {
	var spec readerSpec
	if err := json.Unmarshal([]byte(specJSON), &spec); err != nil {
		fmt.Println("err", err)
		return 2
	}
	if spec.Once != "" {
		return readOnce(spec)
	}
	return readLoop(spec)
}

// readOnce opens spec.Once, says "open", waits for a line on stdin, reads
// and closes the file and prints "ok SHA" or "err MESSAGE".
func readOnce(spec readerSpec) int {
	f, err := os.Open(filepath.Join(spec.Dir, spec.Once))
	if err != nil {
		fmt.Println("err", err)
		return 1
	}
	fmt.Println("open")
	_, _ = bufio.NewReader(os.Stdin).ReadString('\n')
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		fmt.Println("err", err)
		return 1
	}
	// Closed before the answer: the file's release must not wait for
	// this process's exit, which is slow under the race detector.
	if err := f.Close(); err != nil {
		fmt.Println("err", err)
		return 1
	}
	fmt.Println("ok", hex.EncodeToString(h.Sum(nil)))
	return 0
}

// readLoop runs spec.Threads readers until stdin closes, then prints a
// readerReport. Odd threads keep one file open across many reads (at
// random offsets, checked against the whole file's checksum at the end of
// each pass); even threads open, read and close whole files.
func readLoop(spec readerSpec) int {
	names := make([]string, 0, len(spec.Files))
	for n := range spec.Files {
		names = append(names, n)
	}
	sort.Strings(names)
	stop := make(chan struct{})
	go func() { _, _ = io.Copy(io.Discard, os.Stdin); close(stop) }()
	var (
		mu    sync.Mutex
		rep   readerReport
		wg    sync.WaitGroup
		stats = newStatsPrinter(spec.Summary)
	)
	record := func(start time.Time, err error, n int64) {
		op := opRecord{Start: start.UnixNano(), End: time.Now().UnixNano()}
		if err != nil {
			op.Err = err.Error()
		}
		if stats != nil {
			stats.add("read", op, n)
			return
		}
		mu.Lock()
		defer mu.Unlock()
		if err != nil {
			rep.Errors = append(rep.Errors, err.Error())
		}
		rep.Ops = append(rep.Ops, op)
		rep.Bytes += n
	}
	for range spec.Listers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			listLoop(spec, stop, stats)
		}()
	}
	for th := range spec.Threads {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(uint64(th), 7))
			for {
				select {
				case <-stop:
					return
				default:
				}
				name := names[rng.IntN(len(names))]
				if th%2 == 1 {
					readKeptOpen(spec, name, rng, stop, record)
					continue
				}
				start := time.Now()
				b, err := os.ReadFile(filepath.Join(spec.Dir, name))
				if err == nil {
					err = checkSum(name, b, spec.Files[name])
				}
				record(start, err, int64(len(b)))
			}
		}()
	}
	wg.Wait()
	if stats != nil {
		stats.final()
		return 0
	}
	if err := json.NewEncoder(os.Stdout).Encode(rep); err != nil {
		return 1
	}
	return 0
}

// readKeptOpen opens name once and reads it in 256 KiB pieces, each piece
// one operation, until the whole file was read; the assembled content must
// match.
func readKeptOpen(spec readerSpec, name string, rng *rand.Rand, stop <-chan struct{}, record func(time.Time, error, int64)) {
	start := time.Now()
	f, err := os.Open(filepath.Join(spec.Dir, name))
	if err != nil {
		record(start, err, 0)
		return
	}
	defer func() { _ = f.Close() }()
	st, err := f.Stat()
	if err != nil {
		record(start, err, 0)
		return
	}
	content := make([]byte, st.Size())
	const piece = 256 << 10
	order := rng.Perm(int((st.Size() + piece - 1) / piece))
	for _, i := range order {
		select {
		case <-stop:
			return
		default:
		}
		start := time.Now()
		off := int64(i) * piece
		n, err := f.ReadAt(content[off:min(off+piece, st.Size())], off)
		if err == io.EOF && off+int64(n) == st.Size() {
			err = nil
		}
		record(start, err, int64(n))
		time.Sleep(time.Duration(rng.IntN(20)) * time.Millisecond) // keep it open a while
	}
	record(time.Now(), checkSum(name, content, spec.Files[name]), 0)
}

func checkSum(name string, b []byte, want string) error {
	sum := sha256.Sum256(b)
	if got := hex.EncodeToString(sum[:]); got != want {
		return fmt.Errorf("%s: %d bytes with checksum %s, want %s", name, len(b), got[:12], want[:12])
	}
	return nil
}

// sums maps file names to their sha256.
func sums(files map[string][]byte) map[string]string {
	m := make(map[string]string, len(files))
	for k, v := range files {
		s := sha256.Sum256(v)
		m[k] = hex.EncodeToString(s[:])
	}
	return m
}

// reader is a running reader child.
type reader struct {
	cmd   *exec.Cmd
	stdin io.WriteCloser
	out   *bufio.Reader
}

// startReader starts a reader child with spec.
func startReader(t *testing.T, spec readerSpec) *reader {
	t.Helper()
	cmd, stdin, stdout := startChild(t, readerEnv, spec)
	return &reader{cmd: cmd, stdin: stdin, out: bufio.NewReaderSize(stdout, 1<<20)}
}

// startChild re-executes this test binary with env set to spec as JSON
// (TestMain dispatches on it), killed at the end of the test.
func startChild(t *testing.T, env string, spec any) (*exec.Cmd, io.WriteCloser, io.Reader) {
	t.Helper()
	b, err := json.Marshal(spec)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), env+"="+string(b))
	cmd.Stderr = os.Stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = stdin.Close()
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	})
	return cmd, stdin, stdout
}

// line reads the child's next output line.
func (r *reader) line(t *testing.T) string {
	t.Helper()
	s, err := r.out.ReadString('\n')
	if err != nil {
		t.Fatalf("reader child: %v (got %q)", err, s)
	}
	return strings.TrimSpace(s)
}

// report stops a loop reader and decodes its report.
func (r *reader) report(t *testing.T) readerReport {
	t.Helper()
	_ = r.stdin.Close()
	var rep readerReport
	if err := json.NewDecoder(r.out).Decode(&rep); err != nil {
		t.Fatalf("reader report: %v", err)
	}
	return rep
}

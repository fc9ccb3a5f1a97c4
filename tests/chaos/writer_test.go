package chaos

import (
	"bufio"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/basin-csi/basin/internal/testserver"
	"github.com/basin-csi/basin/pkg/objstore"
	"github.com/basin-csi/basin/pkg/objstore/s3store"
)

// Writer children: this test binary re-executed with BASIN_CHAOS_WRITER
// set, so that a write blocked in a dying FUSE process never blocks the
// test, which supervises the FUSE processes.

const writerEnv = "BASIN_CHAOS_WRITER"

// Ways to replace the content of an existing file in place.
const (
	modeTrunc     = "trunc"     // open(O_TRUNC), then write
	modeFtruncate = "ftruncate" // open, ftruncate(0), then write
	modeRewrite   = "rewrite"   // open without truncating, write over the old bytes
	modeCreate    = "create"    // a new file (O_CREAT|O_EXCL)
)

// writerSpec is what a writer child does; the parent passes it as JSON.
type writerSpec struct {
	// One file (Path set): open it as Mode says, say "open", write Size
	// bytes of content(Seed) in Chunk pieces, saying "w I" after piece I,
	// say "closing", close, and say "ok" or "err MESSAGE".
	Path  string `json:"path"`
	Mode  string `json:"mode"`
	Seed  uint64 `json:"seed"`
	Size  int    `json:"size"`
	Chunk int    `json:"chunk"`
	Pause int    `json:"pauseMs"` // between pieces
	// HoldAt > 0: after piece HoldAt, wait Hold ms (a reader comes by).
	HoldAt int `json:"holdAt"`
	Hold   int `json:"holdMs"`

	// A loop (Dir set): Threads writers write checkpoints under Dir until
	// stdin closes, then print a writerReport.
	Dir     string `json:"dir"`
	Threads int    `json:"threads"`
	// Soak: the soak's writer threads (writeSoak) instead, acknowledging
	// each change as it happens; Volume tells their contents apart.
	Soak   bool `json:"soak"`
	Volume int  `json:"volume"`
}

// closedFile is one checkpoint a loop writer closed successfully.
type closedFile struct {
	Name string
	Sum  string
}

// writerReport is the loop writer's final output.
type writerReport struct {
	Ops    []opRecord // each write, fsync and close
	Errors []string
	Closed []closedFile // in order, per name the last one is the content
}

// content is the deterministic content of a writer's file.
func content(seed uint64, size int) []byte {
	b := make([]byte, size)
	var key [32]byte
	for i := range 8 {
		key[i] = byte(seed >> (8 * i))
	}
	_, _ = rand.NewChaCha8(key).Read(b)
	return b
}

func sum(b []byte) string {
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}

func runWriterChild(specJSON string) int {
	var spec writerSpec
	if err := json.Unmarshal([]byte(specJSON), &spec); err != nil {
		fmt.Println("err", err)
		return 2
	}
	if spec.Soak {
		return writeSoak(spec)
	}
	if spec.Dir != "" {
		return writeLoop(spec)
	}
	if err := writeOne(spec); err != nil {
		fmt.Println("err", err)
		return 1
	}
	fmt.Println("ok")
	return 0
}

func writeOne(spec writerSpec) error {
	flags := os.O_WRONLY
	switch spec.Mode {
	case modeTrunc:
		flags |= os.O_TRUNC
	case modeCreate:
		flags |= os.O_CREATE | os.O_EXCL
	}
	f, err := os.OpenFile(spec.Path, flags, 0o644)
	if err != nil {
		return err
	}
	defer func() { _ = f.Close() }()
	if spec.Mode == modeFtruncate {
		if err := f.Truncate(0); err != nil {
			return fmt.Errorf("ftruncate: %w", err)
		}
	}
	fmt.Println("open")
	data := content(spec.Seed, spec.Size)
	for i, off := 0, 0; off < len(data); i++ {
		n := min(spec.Chunk, len(data)-off)
		if _, err := f.WriteAt(data[off:off+n], int64(off)); err != nil {
			return fmt.Errorf("write %d: %w", i, err)
		}
		off += n
		fmt.Println("w", i)
		time.Sleep(time.Duration(spec.Pause) * time.Millisecond)
		if spec.HoldAt > 0 && i == spec.HoldAt {
			time.Sleep(time.Duration(spec.Hold) * time.Millisecond)
		}
	}
	fmt.Println("closing")
	if err := f.Close(); err != nil {
		return fmt.Errorf("close: %w", err)
	}
	return nil
}

// writeLoop: each thread writes 4 MiB checkpoints w<T>/ckpt-<N%4>.pt
// (so later ones replace earlier ones with O_TRUNC) in 256 KiB writes,
// fsyncs once halfway and closes, until stdin closes.
func writeLoop(spec writerSpec) int {
	stop := make(chan struct{})
	go func() { _, _ = io.Copy(io.Discard, os.Stdin); close(stop) }()
	var (
		mu  sync.Mutex
		rep writerReport
		wg  sync.WaitGroup
	)
	record := func(start time.Time, err error) {
		mu.Lock()
		defer mu.Unlock()
		op := opRecord{Start: start.UnixNano(), End: time.Now().UnixNano()}
		if err != nil {
			op.Err = err.Error()
			rep.Errors = append(rep.Errors, err.Error())
		}
		rep.Ops = append(rep.Ops, op)
	}
	const size, piece = 4 << 20, 256 << 10
	for th := range spec.Threads {
		wg.Add(1)
		go func() {
			defer wg.Done()
			start := time.Now()
			err := os.Mkdir(filepath.Join(spec.Dir, fmt.Sprintf("w%d", th)), 0o755)
			record(start, err)
			if err != nil {
				return
			}
			for n := 0; ; n++ {
				select {
				case <-stop:
					return
				default:
				}
				name := fmt.Sprintf("w%d/ckpt-%d.pt", th, n%4)
				data := content(uint64(th)<<32|uint64(n), size)
				path := filepath.Join(spec.Dir, name)
				// Odd threads save atomically, as many checkpointing
				// libraries do: a temporary name of its own, then a
				// rename. (A temporary name used again can meet MinIO's
				// listing of a key being deleted as a prefix: see
				// docs/architecture.md, "A MinIO listing can show a key
				// being deleted as a prefix".)
				tmp := path
				if th%2 == 1 {
					tmp = fmt.Sprintf("%s.tmp%d", path, n)
				}
				err := writeCheckpoint(tmp, data, piece, record)
				if err == nil && tmp != path {
					start := time.Now()
					err = os.Rename(tmp, path)
					record(start, err)
				}
				if err != nil {
					time.Sleep(100 * time.Millisecond) // recorded; no busy loop
					continue
				}
				mu.Lock()
				rep.Closed = append(rep.Closed, closedFile{Name: name, Sum: sum(data)})
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	if err := json.NewEncoder(os.Stdout).Encode(rep); err != nil {
		return 1
	}
	return 0
}

// writeCheckpoint writes one checkpoint, recording each system call.
func writeCheckpoint(path string, data []byte, piece int, record func(time.Time, error)) error {
	start := time.Now()
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
	record(start, err)
	if err != nil {
		return err
	}
	for off := 0; off < len(data); off += piece {
		start := time.Now()
		_, err := f.Write(data[off:min(off+piece, len(data))])
		record(start, err)
		if err == nil && off+piece == len(data)/2 {
			start = time.Now()
			err = f.Sync()
			record(start, err)
		}
		if err != nil {
			_ = f.Close()
			return err
		}
	}
	start = time.Now()
	err = f.Close()
	record(start, err)
	return err
}

// writer is a running writer child.
type writer struct {
	cmd   *exec.Cmd
	stdin io.WriteCloser
	lines chan string // stdout lines; closed at EOF
	out   io.Reader   // for a loop writer's report, instead of lines
}

func startWriter(t *testing.T, spec writerSpec) *writer {
	t.Helper()
	cmd, stdin, stdout := startChild(t, writerEnv, spec)
	w := &writer{cmd: cmd, stdin: stdin}
	if spec.Dir != "" {
		w.out = stdout
		return w
	}
	w.lines = make(chan string, 1024)
	go func() {
		defer close(w.lines)
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			w.lines <- sc.Text()
		}
	}()
	return w
}

// until waits for a line starting with prefix (or the writer's end) and
// returns it; "" if the writer ended first.
func (w *writer) until(t *testing.T, prefix string) string {
	t.Helper()
	timeout := time.After(time.Minute)
	for {
		select {
		case l, ok := <-w.lines:
			if !ok {
				return ""
			}
			if strings.HasPrefix(l, prefix) || strings.HasPrefix(l, "ok") || strings.HasPrefix(l, "err") {
				return l
			}
		case <-timeout:
			t.Fatalf("writer: no %q within a minute", prefix)
		}
	}
}

// store is a client of the bucket.
func (b bucket) store(t *testing.T) objstore.Store {
	t.Helper()
	cfg := objstore.Config{Backend: objstore.BackendS3, Endpoint: b.srv.Endpoint, Region: b.srv.Region, PathStyle: true, Bucket: b.name}
	s, err := s3store.New(t.Context(), cfg, b.creds)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// objectSum is the checksum of key in the bucket, "" if there is none.
func (b bucket) objectSum(t *testing.T, key string) string {
	t.Helper()
	store := b.store(t)
	defer func() { _ = store.Close() }()
	rc, _, err := store.Read(t.Context(), key, objstore.ReadOptions{Length: -1})
	if errors.Is(err, objstore.ErrNotFound) {
		return ""
	}
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = rc.Close() }()
	h := sha256.New()
	if _, err := io.Copy(h, rc); err != nil {
		t.Fatal(err)
	}
	return hex.EncodeToString(h.Sum(nil))
}

// TestOverwriteKeepsOldDataUntilComplete replaces existing objects in
// place through the mount — open(O_TRUNC), ftruncate(0), a rewrite
// without truncation — and creates new ones, and kills the FUSE process
// at many points of each write: right after the open, after the first
// piece, halfway, and while close uploads. After each kill the object in
// the bucket must be the old version or the whole new one (for a new
// file: nothing or the whole file), never empty or partial; the writer,
// carried on by the successor process, must end with success, and then
// the bucket must hold its content.
func TestOverwriteKeepsOldDataUntilComplete(t *testing.T) {
	const size = 12 << 20
	files := map[string][]byte{}
	for i, m := range []string{modeTrunc, modeFtruncate, modeRewrite} {
		files["ckpt/"+m+".pt"] = content(uint64(1000+i), size)
	}
	r := newWritableRig(t, files, "1Gi")
	points := []string{"open", "w 0", "w 6", "closing"}
	rng := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 3))
	seed := uint64(1 << 20)
	kernelEIOs := 0
	defer func() { t.Logf("kernel_eio=%d", kernelEIOs) }()
	for _, mode := range []string{modeTrunc, modeFtruncate, modeRewrite, modeCreate} {
		key := "ckpt/" + mode + ".pt"
		old := r.objectSum(t, key)
		for i, point := range points {
			if mode == modeCreate {
				// O_EXCL claims the name at open: an empty object.
				key = fmt.Sprintf("ckpt/new-%d.pt", i)
				old = sum(nil)
			}
			seed++
			want := sum(content(seed, size))
			w := startWriter(t, writerSpec{Path: filepath.Join(r.staging, key), Mode: mode, Seed: seed, Size: size, Chunk: 1 << 20, Pause: 20})
			if l := w.until(t, point); l == "" || strings.HasPrefix(l, "err") {
				t.Fatalf("%s, before the kill at %q: writer said %q", mode, point, l)
			}
			if point == "closing" {
				time.Sleep(time.Duration(rng.IntN(40)) * time.Millisecond) // the upload under way
			}
			mark := serverLog.mark()
			pid := r.pid(t)
			if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
				t.Fatal(err)
			}
			// In the bucket while the writer may still be blocked: old or
			// the whole new content.
			if got := r.objectSum(t, key); got != old && got != want {
				t.Errorf("%s, killed at %q: the bucket holds %s, neither the old version %s nor the new one %s", mode, point, short(got), short(old), short(want))
			}
			ev := r.waitServing(t, pid)
			if ev.Method != "takeover" || ev.Err != "" {
				t.Fatalf("%s, killed at %q: heal %+v, want a takeover", mode, point, ev)
			}
			result := w.until(t, "ok")
			got := r.objectSum(t, key)
			switch {
			case result != "ok" && kernelEIO(result, serverLog.failedSince(mark)):
				// The kernel failed a write the dying process was
				// reading (see "A request copied at the kill" in
				// docs/architecture.md): counted, not failed, as in the
				// other chaos tests. The writer then closed what it had
				// written: the old version, or its truncation.
				kernelEIOs++
				t.Logf("%s, killed at %q: the kernel's EIO on a write in flight at the kill: %q", mode, point, result)
				truncated := mode == modeTrunc || mode == modeFtruncate
				if got != old && got != want && (!truncated || got != sum(nil)) {
					t.Errorf("%s, killed at %q: after the kernel's EIO the bucket holds %s, neither old %s, new %s nor the truncation", mode, point, short(got), short(old), short(want))
				}
			case result != "ok":
				t.Errorf("%s, killed at %q: the writer failed across the takeover: %q", mode, point, result)
				if got != old && got != want {
					t.Errorf("%s, killed at %q: after the writer's error the bucket holds %s, neither old %s nor new %s", mode, point, short(got), short(old), short(want))
				}
			case got != want:
				t.Errorf("%s, killed at %q: close succeeded but the bucket holds %s, not the new content %s", mode, point, short(got), short(want))
			}
			old = got
		}
	}
}

// TestReaderDuringTakeoverLeavesOldData: a writer is halfway through
// replacing an object (O_TRUNC) when the FUSE process is killed, and
// before it writes again another process opens, reads and closes the
// file. The bucket must still hold the old version then (the reader must
// not upload the unfinished content), and the whole new one once the
// writer closes.
func TestReaderDuringTakeoverLeavesOldData(t *testing.T) {
	const size = 8 << 20
	key := "ckpt/model.pt"
	old := content(7, size)
	r := newWritableRig(t, map[string][]byte{key: old}, "1Gi")
	seed := uint64(77)
	w := startWriter(t, writerSpec{Path: filepath.Join(r.staging, key), Mode: modeTrunc, Seed: seed, Size: size, Chunk: 1 << 20, HoldAt: 3, Hold: 4000})
	if l := w.until(t, "w 3"); l != "w 3" {
		t.Fatalf("writer: %q", l)
	}
	pid := r.pid(t)
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	r.waitServing(t, pid)
	rd := startReader(t, readerSpec{Dir: r.staging, Files: map[string]string{key: sum(old)}, Once: key})
	if l := rd.line(t); l != "open" {
		t.Fatalf("reader: %q", l)
	}
	if _, err := rd.stdin.Write([]byte("go\n")); err != nil {
		t.Fatal(err)
	}
	if l := rd.line(t); !strings.HasPrefix(l, "ok ") {
		t.Fatalf("reader: %q", l)
	}
	time.Sleep(time.Second) // the kernel releases the reader's file after close returned
	if got := r.objectSum(t, key); got != sum(old) {
		t.Errorf("after a reader's close during the writer's pause the bucket holds %s, not the old version", short(got))
	}
	if l := w.until(t, "ok"); l != "ok" {
		t.Fatalf("writer: %q", l)
	}
	if got, want := r.objectSum(t, key), sum(content(seed, size)); got != want {
		t.Errorf("after the writer's close the bucket holds %s, want the new content %s", short(got), short(want))
	}
}

func short(s string) string {
	if s == "" {
		return "(nothing)"
	}
	return s[:12]
}

// TestChaosWriters is the writer variant of make chaos: 3 writer threads
// write 4 MiB checkpoints (open with O_TRUNC, 256 KiB writes, an fsync
// halfway, close; the middle thread under a temporary name, then renamed
// over the checkpoint) in a loop while the FUSE process is killed at
// random moments. No write, fsync, close or rename may fail, every
// checkpoint saved must be byte-exact in the bucket (the last one of each
// name), and no writer may stall for 3 s.
//
// One failure is the kernel's, not Basin's, and is counted apart
// (kernel_eio; checkKillErrors). The summary line `writers: errors= kills=
// files= max_pause_ms= p50_pause_ms= kernel_eio=` goes to
// $BASIN_CHAOS_WRITER_SUMMARY.
func TestChaosWriters(t *testing.T) {
	testserver.OptIn(t, chaosEnv, "make chaos")
	kills := 20
	if n, err := strconv.Atoi(os.Getenv(chaosEnv)); err == nil && n > 1 {
		kills = n
	}
	r := newWritableRig(t, map[string][]byte{"README": []byte("checkpoints\n")}, "1Gi")
	mark := serverLog.mark()
	w := startWriter(t, writerSpec{Dir: r.staging, Threads: 3})
	rng := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 5))
	var done []killAt
	time.Sleep(500 * time.Millisecond)
	for range kills {
		time.Sleep(time.Duration(200+rng.IntN(800)) * time.Millisecond)
		old := r.pid(t)
		at := time.Now()
		if err := syscall.Kill(old, syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
		ev := r.waitServing(t, old)
		if ev.Method != "takeover" || ev.Err != "" {
			t.Errorf("heal after kill %d: %+v, want a takeover", len(done)+1, ev)
		}
		done = append(done, killAt{at: at, healed: time.Now()})
	}
	time.Sleep(time.Second)
	_ = w.stdin.Close()
	var rep writerReport
	if err := json.NewDecoder(w.out).Decode(&rep); err != nil {
		t.Fatalf("writer report: %v", err)
	}
	errs, kernelEIO := checkKillErrors(t, "writer", rep.Ops, done, serverLog.failedSince(mark))
	last := map[string]string{}
	for _, c := range rep.Closed {
		last[c.Name] = c.Sum
	}
	for name, want := range last {
		if got := r.objectSum(t, name); got != want {
			t.Errorf("%s: the bucket holds %s, the last close wrote %s", name, short(got), short(want))
		}
	}
	if len(rep.Closed) < len(done) {
		t.Errorf("only %d checkpoints closed during %d kills: the writers stalled", len(rep.Closed), len(done))
	}
	pauses := pausesOf(readerReport{Ops: rep.Ops}, done)
	slices.Sort(pauses)
	maxPause, p50 := pauses[len(pauses)-1], pauses[len(pauses)/2]
	if maxPause >= 3*time.Second {
		t.Errorf("max pause %v: a writer stalled", maxPause)
	}
	writeSummary(t, "BASIN_CHAOS_WRITER_SUMMARY", fmt.Sprintf("writers: errors=%d kills=%d files=%d max_pause_ms=%d p50_pause_ms=%d kernel_eio=%d",
		errs, len(done), len(rep.Closed), maxPause.Milliseconds(), p50.Milliseconds(), kernelEIO))
}

// kernelEIO reports whether a writer's failure is the kernel's EIO on a
// write in flight at a kill: an "input/output error" of a write while no
// FUSE process logged a failed operation (failed: their lines since the
// kill).
func kernelEIO(result string, failed []string) bool {
	return strings.HasPrefix(result, "err write ") && strings.HasSuffix(result, "input/output error") && len(failed) == 0
}

package chaos

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"
)

// A soak's workers run for an hour: instead of every operation they
// report counters per kind of operation (statsLine), every statsEvery and
// once more at the end, and the failed operations themselves (up to
// maxErrOps). A writer also reports each acknowledgement as it happens
// (ackLine), so that the soak checks the bucket while it runs.

// statsEvery is how often a worker child prints its counters.
const statsEvery = 5 * time.Second

// maxErrOps bounds the failed operations a worker keeps (the count goes
// on).
const maxErrOps = 2000

// opStats counts one kind of operation of one worker child.
type opStats struct {
	Ops, Errors, Bytes int64
	// MaxNs is the longest operation, started at MaxAt (unix ns).
	MaxNs, MaxAt int64
}

// workerStats is one statsLine's counters.
type workerStats struct {
	Kinds  map[string]*opStats
	ErrOps []errRun // failed operations, in runs (the first maxErrOps runs)
	Final  bool     // the last line: the child stopped
}

// errRun is a run of failed operations of one kind with one error
// number, each starting within errRunGap of the last one's end: a broken
// mount fails thousands of calls a second, all alike. The run's
// opRecord spans from the first one's start to the last one's end; Err
// is the first one's message.
type errRun struct {
	Kind  string
	Errno string // the message's text after its last ": "
	Count int64
	opRecord
}

// errRunGap is how far apart two failures may be to share a run.
const errRunGap = int64(time.Second)

// errnoText is the part of an error message after its last ": ".
func errnoText(msg string) string {
	if i := strings.LastIndex(msg, ": "); i >= 0 {
		return msg[i+2:]
	}
	return msg
}

// soakLine is one output line of a soak worker child: counters or an
// acknowledgement.
type soakLine struct {
	Stats *workerStats `json:",omitempty"`
	Ack   *ack         `json:",omitempty"`
}

// statsPrinter keeps a worker child's counters and prints them.
type statsPrinter struct {
	mu    sync.Mutex // guards st, sent and stdout
	st    workerStats
	sent  int // ErrOps already printed
	enc   *json.Encoder
	stop  chan struct{}
	ended chan struct{}
}

// newStatsPrinter returns a printer writing to stdout every statsEvery,
// or nil when on is false.
func newStatsPrinter(on bool) *statsPrinter {
	if !on {
		return nil
	}
	p := &statsPrinter{st: workerStats{Kinds: map[string]*opStats{}}, enc: json.NewEncoder(os.Stdout),
		stop: make(chan struct{}), ended: make(chan struct{})}
	go func() {
		defer close(p.ended)
		for {
			select {
			case <-p.stop:
				return
			case <-time.After(statsEvery):
				p.print(false)
			}
		}
	}()
	return p
}

// add counts op, of kind, that moved n bytes.
func (p *statsPrinter) add(kind string, op opRecord, n int64) {
	p.mu.Lock()
	defer p.mu.Unlock()
	s := p.st.Kinds[kind]
	if s == nil {
		s = &opStats{}
		p.st.Kinds[kind] = s
	}
	s.Ops++
	s.Bytes += n
	if d := op.End - op.Start; d > s.MaxNs {
		s.MaxNs, s.MaxAt = d, op.Start
	}
	if op.Err != "" {
		s.Errors++
		p.addErr(kind, op)
	}
}

// addErr adds a failed op to its run (the last run of its kind and error
// number, if near enough), or starts one. The caller holds p.mu.
func (p *statsPrinter) addErr(kind string, op opRecord) {
	errno := errnoText(op.Err)
	for i := len(p.st.ErrOps) - 1; i >= 0 && i >= len(p.st.ErrOps)-8; i-- {
		r := &p.st.ErrOps[i]
		if r.Kind == kind && r.Errno == errno && op.Start-r.End < errRunGap && i >= p.sent {
			r.Count++
			r.Start, r.End = min(r.Start, op.Start), max(r.End, op.End)
			return
		}
	}
	if len(p.st.ErrOps) < maxErrOps {
		p.st.ErrOps = append(p.st.ErrOps, errRun{Kind: kind, Errno: errno, Count: 1, opRecord: op})
	}
}

// ack prints an acknowledgement at once.
func (p *statsPrinter) ack(a ack) {
	p.mu.Lock()
	defer p.mu.Unlock()
	_ = p.enc.Encode(soakLine{Ack: &a})
}

// print writes the counters and the failed operations not sent yet.
func (p *statsPrinter) print(final bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	st := workerStats{Kinds: p.st.Kinds, ErrOps: p.st.ErrOps[p.sent:], Final: final}
	p.sent = len(p.st.ErrOps)
	_ = p.enc.Encode(soakLine{Stats: &st})
}

// final stops the periodic lines and prints the last one.
func (p *statsPrinter) final() {
	close(p.stop)
	<-p.ended
	p.print(true)
}

// listLoop lists every directory of spec.Files until stop closes; a
// listing without one of the names there is an error.
func listLoop(spec readerSpec, stop <-chan struct{}, stats *statsPrinter) {
	want := map[string][]string{}
	for name := range spec.Files {
		dir := filepath.Dir(name)
		want[dir] = append(want[dir], filepath.Base(name))
	}
	dirs := make([]string, 0, len(want))
	for d := range want {
		dirs = append(dirs, d)
	}
	sort.Strings(dirs)
	for i := 0; ; i++ {
		select {
		case <-stop:
			return
		case <-time.After(50 * time.Millisecond):
		}
		dir := dirs[i%len(dirs)]
		start := time.Now()
		entries, err := os.ReadDir(filepath.Join(spec.Dir, dir))
		if err == nil {
			var missing []string
			for _, n := range want[dir] {
				if !slices.ContainsFunc(entries, func(e os.DirEntry) bool { return e.Name() == n }) {
					missing = append(missing, n)
				}
			}
			if len(missing) > 0 {
				err = &listError{dir: dir, missing: missing}
			}
		}
		op := opRecord{Start: start.UnixNano(), End: time.Now().UnixNano()}
		if err != nil {
			op.Err = err.Error()
		}
		stats.add("list", op, int64(len(entries)))
	}
}

// listError: a listing lacked names it must show.
type listError struct {
	dir     string
	missing []string
}

func (e *listError) Error() string {
	return "list " + e.dir + ": missing " + strings.Join(e.missing, ",")
}

package supervisor

import (
	"bytes"
	"strings"
	"sync"

	"k8s.io/klog/v2"
)

// maxLineLength cuts overlong output lines (a runaway child must not make
// the node plugin buffer without bound).
const maxLineLength = 4096

// lineLog is the io.Writer a child's output goes to: each complete line
// goes to klog with the volume ID, and the last lines are kept for error
// messages.
type lineLog struct {
	// constant
	volumeID string
	keep     int

	mu      sync.Mutex // guards partial, lines, next
	partial []byte     // an unterminated last line
	lines   []string   // ring buffer of the last keep lines
	next    int        // index of the oldest line once the ring is full
}

func newLineLog(volumeID string, keep int) *lineLog {
	return &lineLog{volumeID: volumeID, keep: max(keep, 1)}
}

// Write logs complete lines and keeps the rest for the next call.
func (l *lineLog) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.partial = append(l.partial, p...)
	for {
		i := bytes.IndexByte(l.partial, '\n')
		if i < 0 {
			break
		}
		l.add(string(l.partial[:i]))
		l.partial = l.partial[i+1:]
	}
	if len(l.partial) > maxLineLength {
		l.add(string(l.partial))
		l.partial = nil
	}
	if len(l.partial) == 0 {
		l.partial = nil // release the backing array
	}
	return len(p), nil
}

// add records one line; the caller holds mu.
func (l *lineLog) add(line string) {
	line = strings.TrimRight(line, "\r")
	if len(line) > maxLineLength {
		line = line[:maxLineLength] + "…"
	}
	if line == "" {
		return
	}
	klog.InfoS("FUSE process: "+line, "volume", l.volumeID)
	if len(l.lines) < l.keep {
		l.lines = append(l.lines, line)
		return
	}
	l.lines[l.next] = line
	l.next = (l.next + 1) % l.keep
}

// Tail returns the last lines, oldest first, including an unterminated
// last line.
func (l *lineLog) Tail() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := make([]string, 0, len(l.lines)+1)
	out = append(out, l.lines[l.next:]...)
	out = append(out, l.lines[:l.next]...)
	if len(l.partial) > 0 {
		out = append(out, string(l.partial))
	}
	return out
}

// tailMessage is Tail for an error message: the last n lines, or "" when
// the child said nothing.
func (l *lineLog) tailMessage(n int) string {
	t := l.Tail()
	if len(t) > n {
		t = t[len(t)-n:]
	}
	if len(t) == 0 {
		return ""
	}
	return "; last output: " + strings.Join(t, " | ")
}

package chaos

import (
	"bytes"
	"flag"
	"os"
	"sync"

	"k8s.io/klog/v2"
)

// failedOpMarker is what a FUSE process logs with an operation it failed
// (pkg/fuse FS.errno).
const failedOpMarker = "fuse op failed"

// logTap is where the test binary's klog output goes (the supervisor
// relays each FUSE process's output line by line): it passes everything
// to stderr and keeps the lines in which a FUSE process reported a failed
// operation, so that a test can tell an error the server answered from one
// the kernel made up (see TestChaosWriters).
type logTap struct {
	mu     sync.Mutex
	failed [][]byte // guarded by mu
}

// serverLog is the test binary's tap, installed by TestMain.
var serverLog = &logTap{}

// install makes klog write each entry once, to the tap only.
func (l *logTap) install() {
	var fs flag.FlagSet
	klog.InitFlags(&fs)
	for k, v := range map[string]string{"logtostderr": "false", "alsologtostderr": "false", "one_output": "true", "stderrthreshold": "FATAL"} {
		if err := fs.Set(k, v); err != nil {
			panic(err)
		}
	}
	klog.SetOutput(l)
}

func (l *logTap) Write(p []byte) (int, error) {
	if bytes.Contains(p, []byte(failedOpMarker)) {
		l.mu.Lock()
		l.failed = append(l.failed, bytes.TrimSpace(bytes.Clone(p)))
		l.mu.Unlock()
	}
	return os.Stderr.Write(p)
}

// mark is the position a later failedSince starts from.
func (l *logTap) mark() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.failed)
}

// failedSince returns the FUSE processes' failed-operation lines logged
// since mark.
func (l *logTap) failedSince(mark int) []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []string
	for _, b := range l.failed[min(mark, len(l.failed)):] {
		out = append(out, string(b))
	}
	return out
}

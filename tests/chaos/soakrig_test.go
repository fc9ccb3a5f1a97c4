package chaos

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/container-storage-interface/spec/lib/go/csi"

	"github.com/basin-csi/basin/internal/testserver"
	"github.com/basin-csi/basin/pkg/objstore"
	"github.com/basin-csi/basin/pkg/supervisor"
)

// soakRig is the soak's node: one MinIO, the node plugin and the
// descriptor holder (nodeRig) with the cache root on a tmpfs of its own,
// and three volumes, each with a reader child (readers and listers) and a
// writer child (writeSoak).
type soakRig struct {
	t    *testing.T
	ctx  context.Context
	node *nodeRig
	srv  *testserver.Server
	sts  stsIssuer
	vols []*soakVol
	out  string // the report directory
	t0   time.Time

	nodeMu  sync.Mutex // one node plugin restart, pause, republish or remount at a time
	minioMu sync.Mutex // one MinIO restart or pause at a time

	logMu    sync.Mutex
	log      *os.File // soak.log: faults and progress
	failures []string // guarded by logMu
	kept     bool     // keepEvidence ran
}

// soakVol is one volume of the soak and its workers.
type soakVol struct {
	idx    int
	id     string
	pub    publication
	files  map[string][]byte // the readers' files, under data/
	reader *soakChild
	writer *soakChild
	ledger *ledger
}

// soakChild is a running worker child and what it reported so far.
type soakChild struct {
	name  string
	cmd   *exec.Cmd
	stdin io.WriteCloser

	mu     sync.Mutex
	kinds  map[string]*opStats // the last counters
	errOps []errRun
	ended  chan struct{} // closed when its output ended
	final  bool
}

// logf writes a line to the soak's log and the test's output.
func (s *soakRig) logf(format string, args ...any) {
	line := fmt.Sprintf("%s +%s ", time.Now().UTC().Format("15:04:05.000"), time.Since(s.t0).Round(time.Second)) + fmt.Sprintf(format, args...)
	s.logMu.Lock()
	defer s.logMu.Unlock()
	_, _ = fmt.Fprintln(s.log, line)
	fmt.Fprintln(os.Stderr, "soak:", line)
}

// failf records a failure (from any goroutine); the test fails at the end.
func (s *soakRig) failf(format string, args ...any) {
	msg := fmt.Sprintf(format, args...)
	s.logf("FAILURE: %s", msg)
	s.logMu.Lock()
	defer s.logMu.Unlock()
	s.failures = append(s.failures, msg)
}

// startWorker starts a worker child (readerEnv or writerEnv) and reads its
// lines; acks go to v's ledger.
func (s *soakRig) startWorker(name, env string, spec any, l *ledger) *soakChild {
	cmd, stdin, stdout := startChild(s.t, env, spec)
	c := &soakChild{name: name, cmd: cmd, stdin: stdin, kinds: map[string]*opStats{}, ended: make(chan struct{})}
	go func() {
		defer close(c.ended)
		dec := json.NewDecoder(bufio.NewReaderSize(stdout, 1<<20))
		for {
			var line soakLine
			if err := dec.Decode(&line); err != nil {
				if err != io.EOF {
					s.failf("%s: reading its output: %v", name, err)
				}
				return
			}
			switch {
			case line.Ack != nil && l != nil:
				l.add(*line.Ack)
			case line.Stats != nil:
				c.mu.Lock()
				c.kinds = line.Stats.Kinds
				c.errOps = append(c.errOps, line.Stats.ErrOps...)
				c.final = c.final || line.Stats.Final
				c.mu.Unlock()
			}
		}
	}()
	return c
}

// stop closes the child's stdin and waits for its last line.
func (c *soakChild) stop(timeout time.Duration) error {
	_ = c.stdin.Close()
	select {
	case <-c.ended:
	case <-time.After(timeout):
		return fmt.Errorf("%s did not stop within %v", c.name, timeout)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.final {
		return fmt.Errorf("%s ended without its final counters", c.name)
	}
	return nil
}

// snapshot returns the child's counters and failed operations.
func (c *soakChild) snapshot() (map[string]opStats, []errRun) {
	c.mu.Lock()
	defer c.mu.Unlock()
	m := make(map[string]opStats, len(c.kinds))
	for k, v := range c.kinds {
		m[k] = *v
	}
	return m, append([]errRun(nil), c.errOps...)
}

// fusePid returns the pid of volume id's serving FUSE process (standby:
// its standby), 0 if there is none. A standby has not opened the cache
// (the serving process holds its lock): the one with the cache's index
// open serves, whether it started as a standby or not.
func (s *soakRig) fusePid(id string, standby bool) (int, error) {
	pids, err := supervisor.ProcsUnder(s.node.cacheRoot)
	if err != nil {
		return 0, err
	}
	for _, pid := range pids {
		argv, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
		if err != nil {
			continue
		}
		args := strings.Split(string(argv), "\x00")
		isStandby := !holdsIndex(pid)
		for i, a := range args {
			if a == "--volume-id" && i+1 < len(args) && args[i+1] == id && isStandby == standby {
				return pid, nil
			}
		}
	}
	return 0, nil
}

// holdsIndex reports whether pid has a cache's index open.
func holdsIndex(pid int) bool {
	fds, err := os.ReadDir(fmt.Sprintf("/proc/%d/fd", pid))
	if err != nil {
		return false
	}
	for _, fd := range fds {
		if target, err := os.Readlink(fmt.Sprintf("/proc/%d/fd/%s", pid, fd.Name())); err == nil && filepath.Base(target) == cacheIndexName {
			return true
		}
	}
	return false
}

// cacheIndexName is the cache's index file (pkg/cache).
const cacheIndexName = "index.db"

// isFUSE reports whether pid is one of the rig's FUSE processes still.
func (s *soakRig) isFUSE(pid int) bool {
	pids, _ := supervisor.ProcsUnder(s.node.cacheRoot)
	for _, p := range pids {
		if p == pid {
			return true
		}
	}
	return false
}

// storeServes waits until MinIO serves the volumes' requests after a
// restart: it issues temporary credentials (its IAM is initialised; the
// volumes use such credentials) and answers a HEAD (its object layer is
// initialised). Until then MinIO answers 503 ("Server not initialized",
// "IAM sub-system not initialized"), although its health check
// (/minio/health/live, which testserver waits for) answers already.
func (s *soakRig) storeServes(ctx context.Context) error {
	if _, err := s.sts.assume(ctx); err != nil {
		return fmt.Errorf("MinIO after its restart: temporary credentials: %w", err)
	}
	ctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	for {
		_, err := s.vols[0].ledger.store.Stat(ctx, "soak-ready-probe")
		if err == nil || errors.Is(err, objstore.ErrNotFound) {
			return nil
		}
		if ctx.Err() != nil {
			return fmt.Errorf("MinIO after its restart: HEAD: %w", err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// waitHealthy waits until the node plugin answers a statfs of v's
// staging path and of its published target through NodeGetVolumeStats.
// Both count: after a remount the new mount serves on the staging path
// before it is bound over the target, and the pod reads the target (a
// soak once ended a remount's window 11 s before its target served).
func (s *soakRig) waitHealthy(v *soakVol, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	var last error
	for time.Now().Before(deadline) && s.ctx.Err() == nil {
		ctx, cancel := context.WithTimeout(s.ctx, 2*time.Second)
		last = s.node.call(ctx, func(ctx context.Context, c csi.NodeClient) error {
			for _, path := range []string{v.pub.staging, v.pub.target} {
				if _, err := c.NodeGetVolumeStats(ctx, &csi.NodeGetVolumeStatsRequest{VolumeId: v.id, VolumePath: path}); err != nil {
					return err
				}
			}
			return nil
		})
		cancel()
		if last == nil {
			return nil
		}
		time.Sleep(50 * time.Millisecond)
	}
	return fmt.Errorf("volume %s not healthy within %v: %v", v.id, timeout, last)
}

// waitAllHealthy waits for every volume.
func (s *soakRig) waitAllHealthy(timeout time.Duration) error {
	for _, v := range s.vols {
		if err := s.waitHealthy(v, timeout); err != nil {
			return err
		}
	}
	return nil
}

// mountTable returns the mount table's lines under the rig's directory.
func (s *soakRig) mountTable() []string {
	b, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		return []string{err.Error()}
	}
	var out []string
	for _, l := range strings.Split(string(b), "\n") {
		if f := strings.Fields(l); len(f) > 4 && strings.HasPrefix(f[4], s.node.dir+"/") {
			out = append(out, l)
		}
	}
	return out
}

// stagedFiles counts the files in the volumes' staged-writes directories.
func (s *soakRig) stagedFiles() int {
	m, _ := filepath.Glob(filepath.Join(s.node.cacheRoot, "*", "writes", "*"))
	return len(m)
}

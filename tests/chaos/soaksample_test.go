package chaos

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/basin-csi/basin/pkg/fdholder"
	"github.com/basin-csi/basin/pkg/supervisor"
)

// What the soak measures of its processes, over time (sampler) and at the
// start and end (leakCount).

// sample is one measurement of the node's processes.
type sample struct {
	At               time.Duration // since the rig started
	NodeRSS, NodeFDs int64         // the node plugin (bytes, descriptors)
	HolderRSS        int64
	HolderFDs        int64
	FUSERSS, FUSEFDs int64 // all FUSE processes together
	// FUSEDataFDs are those of FUSEFDs on cached objects' data files:
	// each cache keeps the most recent idle objects' files open, up to
	// min(4096, RLIMIT_NOFILE/4) per process (pkg/cache idle.go), so they
	// grow with the objects read; the others should not.
	FUSEDataFDs int64
	FUSEProcs   int
	Goroutines  int64 // the node plugin's (go_goroutines), -1 unknown
	Mounts      int
	Staged      int
}

// sampler measures every interval until stopped.
type sampler struct {
	s    *soakRig
	stop func()
	done chan struct{}

	mu      sync.Mutex
	samples []sample
}

func startSampler(s *soakRig, every time.Duration) *sampler {
	ctx, cancel := context.WithCancel(context.Background())
	sp := &sampler{s: s, stop: cancel, done: make(chan struct{})}
	go func() {
		defer close(sp.done)
		for {
			m := s.measure()
			sp.mu.Lock()
			sp.samples = append(sp.samples, m)
			sp.mu.Unlock()
			select {
			case <-ctx.Done():
				return
			case <-time.After(every):
			}
		}
	}()
	stop := sp.stop
	sp.stop = func() { stop(); <-sp.done }
	return sp
}

// all returns the samples so far.
func (sp *sampler) all() []sample {
	sp.mu.Lock()
	defer sp.mu.Unlock()
	return append([]sample(nil), sp.samples...)
}

// measure samples the node plugin, the holder and the FUSE processes.
func (s *soakRig) measure() sample {
	m := sample{At: time.Since(s.t0), Goroutines: -1}
	if p := s.node.node; p != nil && p.Process != nil {
		m.NodeRSS, m.NodeFDs = procRSS(p.Process.Pid), procFDs(p.Process.Pid)
		m.Goroutines = s.goroutines()
	}
	if p := s.node.holder; p != nil && p.Process != nil {
		m.HolderRSS, m.HolderFDs = procRSS(p.Process.Pid), procFDs(p.Process.Pid)
	}
	pids, _ := supervisor.ProcsUnder(s.node.cacheRoot)
	for _, pid := range pids {
		m.FUSERSS += procRSS(pid)
		m.FUSEFDs += procFDs(pid)
		m.FUSEDataFDs += procFDsUnder(pid, s.node.cacheRoot, "/data/")
	}
	m.FUSEProcs = len(pids)
	m.Mounts = len(s.mountTable())
	m.Staged = s.stagedFiles()
	return m
}

// procRSS is a process's resident size in bytes (0 if gone).
func procRSS(pid int) int64 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0
	}
	for _, l := range strings.Split(string(b), "\n") {
		if f := strings.Fields(l); len(f) >= 2 && f[0] == "VmRSS:" {
			kb, _ := strconv.ParseInt(f[1], 10, 64)
			return kb << 10
		}
	}
	return 0
}

// procFDs is a process's number of open descriptors (0 if gone).
func procFDs(pid int) int64 {
	e, err := os.ReadDir(fmt.Sprintf("/proc/%d/fd", pid))
	if err != nil {
		return 0
	}
	return int64(len(e))
}

// procFDsUnder is how many of a process's descriptors are files under
// root whose path holds part.
func procFDsUnder(pid int, root, part string) int64 {
	e, err := os.ReadDir(fmt.Sprintf("/proc/%d/fd", pid))
	if err != nil {
		return 0
	}
	var n int64
	for _, fd := range e {
		t, err := os.Readlink(fmt.Sprintf("/proc/%d/fd/%s", pid, fd.Name()))
		if err == nil && strings.HasPrefix(t, root) && strings.Contains(t[len(root):], part) {
			n++
		}
	}
	return n
}

// goroutines scrapes go_goroutines from the node plugin's /metrics; -1
// when it does not answer (restarting, paused).
func (s *soakRig) goroutines() int64 {
	c := http.Client{Timeout: 2 * time.Second}
	resp, err := c.Get("http://" + s.node.metrics + "/metrics")
	if err != nil {
		return -1
	}
	defer func() { _ = resp.Body.Close() }()
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "go_goroutines "); ok {
			n, err := strconv.ParseFloat(v, 64)
			if err == nil {
				return int64(n)
			}
		}
	}
	return -1
}

// freeLocalPort is an unused TCP port on 127.0.0.1.
func freeLocalPort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer func() { _ = l.Close() }()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// leaks is what must not grow over a soak.
type leaks struct {
	FUSEProcs  int   // serving and standby processes
	Mounts     int   // mounts under the rig (the cache's tmpfs, stagings, targets)
	Staged     int   // files in the caches' writes/ directories
	Held       int   // connections the holder keeps
	NodeFDs    int64 // descriptors of the node plugin
	Goroutines int64 // of the node plugin
}

func (l leaks) String() string {
	return fmt.Sprintf("fuse_procs=%d mounts=%d staged=%d held=%d node_fds=%d node_goroutines=%d",
		l.FUSEProcs, l.Mounts, l.Staged, l.Held, l.NodeFDs, l.Goroutines)
}

// leakCount counts what leaks would show.
func (s *soakRig) leakCount() leaks {
	m := s.measure()
	l := leaks{FUSEProcs: m.FUSEProcs, Mounts: m.Mounts, Staged: m.Staged, NodeFDs: m.NodeFDs, Goroutines: m.Goroutines, Held: -1}
	ctx, cancel := context.WithTimeout(s.ctx, 5*time.Second)
	defer cancel()
	if held, err := fdholder.NewClient(s.node.holderSocket()).List(ctx); err == nil {
		l.Held = len(held)
	}
	return l
}

// Slack of the counts that move on their own: the node plugin's
// descriptors (gRPC connections, a process being started) and goroutines
// (its servers' connections, a heal's helpers).
const (
	fdSlack        = 8
	goroutineSlack = 25
)

// within reports whether end has no more than start of everything,
// except for the slack, and no staged file (the writers stopped).
func (l leaks) within(start leaks) bool {
	return l.FUSEProcs <= start.FUSEProcs && l.Mounts <= start.Mounts && l.Staged == 0 && l.Held <= start.Held &&
		l.NodeFDs <= start.NodeFDs+fdSlack && (l.Goroutines < 0 || start.Goroutines < 0 || l.Goroutines <= start.Goroutines+goroutineSlack)
}

// settledLeakCount counts again until the count is within start's or
// timeout passed (a standby being started, a connection closing).
func (s *soakRig) settledLeakCount(start leaks, timeout time.Duration) leaks {
	deadline := time.Now().Add(timeout)
	for {
		end := s.leakCount()
		if end.within(start) || time.Now().After(deadline) {
			return end
		}
		time.Sleep(time.Second)
	}
}

// checkLeaks fails the soak unless end is within start.
func (s *soakRig) checkLeaks(start, end leaks) {
	if !end.within(start) {
		s.failf("leak: at the end %s, at the start %s (slack: %d descriptors, %d goroutines; no staged file once the writers stopped)",
			end, start, fdSlack, goroutineSlack)
	}
}

// checkUnstaged fails the soak if anything of the volumes is left after
// their unstage: a FUSE process, a mount but the cache's tmpfs, a held
// connection, a staged file.
func (s *soakRig) checkUnstaged() {
	l := s.leakCount()
	if l.FUSEProcs != 0 || l.Mounts != 1 || l.Held != 0 || l.Staged != 0 {
		s.failf("after unstaging every volume: %s; mounts: %q", l, s.mountTable())
	}
}

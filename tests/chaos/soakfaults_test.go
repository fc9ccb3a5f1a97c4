package chaos

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"sync"
	"syscall"
	"time"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"golang.org/x/sys/unix"

	"github.com/basin-csi/basin/internal/fusectl"
	"github.com/basin-csi/basin/pkg/supervisor"
)

// The soak's fault injector. Its schedule — when each fault starts, its
// kind, its target and how long it lasts — comes from the seed alone, so
// a failing run replays the same schedule; the faults run in goroutines of
// their own and overlap, but two of one kind never do.

// faultKind is one kind of fault and its weight in the schedule.
type faultKind struct {
	name   string
	weight int
}

// Kinds of faults.
var faultKinds = []faultKind{
	{"fuse-kill", 6},     // SIGKILL of a volume's serving FUSE process (or, one in four, its standby)
	{"fuse-stop", 3},     // SIGSTOP of a serving FUSE process for 0.5–14 s (the watchdog kills it past 10 s)
	{"node-kill", 2},     // the node plugin's container: the plugin and its FUSE processes SIGKILLed, a new plugin
	{"node-stop", 2},     // SIGSTOP of the node plugin for 0.5–5 s
	{"minio-restart", 1}, // MinIO stopped and started again (0–2 s down)
	{"minio-stop", 2},    // SIGSTOP of MinIO for 0.5–8 s
	{"cache-fill", 1},    // the cache disk filled to its floor for 5–30 s, then freed
	{"rotate", 2},        // new credentials for a volume (MinIO STS), delivered by a republish
	{"remount", 1},       // a volume's connection aborted: the node plugin remounts it
	{"cpu", 1},           // a CPU burner on every core for 5–40 s
}

// fault is one scheduled fault.
type fault struct {
	At     time.Duration // after the schedule's start
	Kind   string
	Volume int           // target volume (fuse-*, rotate, remount)
	For    time.Duration // how long a pause, fill or burn lasts
	Alt    bool          // fuse-kill: the standby
}

// schedule draws the faults of a run of length d from seed: one every
// 0.5–6 s.
func schedule(seed uint64, d time.Duration, volumes int) []fault {
	rng := rand.New(rand.NewPCG(seed, 0x50a4))
	total := 0
	for _, k := range faultKinds {
		total += k.weight
	}
	var out []fault
	for at := 2 * time.Second; ; {
		at += time.Duration(500+rng.IntN(5500)) * time.Millisecond
		if at >= d {
			return out
		}
		f := fault{At: at, Volume: rng.IntN(volumes)}
		w := rng.IntN(total)
		for _, k := range faultKinds {
			if w < k.weight {
				f.Kind = k.name
				break
			}
			w -= k.weight
		}
		switch f.Kind {
		case "fuse-stop":
			f.For = time.Duration(500+rng.IntN(13500)) * time.Millisecond
		case "node-stop":
			f.For = time.Duration(500+rng.IntN(4500)) * time.Millisecond
		case "minio-restart":
			f.For = time.Duration(rng.IntN(2000)) * time.Millisecond
		case "minio-stop":
			f.For = time.Duration(500+rng.IntN(7500)) * time.Millisecond
		case "cache-fill":
			f.For = time.Duration(5+rng.IntN(25)) * time.Second
		case "cpu":
			f.For = time.Duration(5+rng.IntN(35)) * time.Second
		case "fuse-kill":
			f.Alt = rng.IntN(4) == 0
		}
		out = append(out, f)
	}
}

// injected is one fault as carried out.
type injected struct {
	fault
	Start, End time.Time
	Skipped    string // why it was not carried out (one of its kind still running, no target)
	Note       string
}

// injector carries out a schedule on a soak rig.
type injector struct {
	s *soakRig

	mu   sync.Mutex
	busy map[string]bool
	done []injected
	// kills: each time FUSE processes died (or may have been killed by the
	// watchdog: a SIGSTOP), for checkKillErrors' kernel EIO.
	kills []killAt
	// remounts: per volume, when its connection was aborted and when it
	// served again (a remount breaks open files by design).
	remounts map[int][]killAt
}

// run carries out sched until ctx ends, then waits for every fault to end.
func (in *injector) run(ctx context.Context, sched []fault) {
	start := time.Now()
	var wg sync.WaitGroup
	for _, f := range sched {
		select {
		case <-ctx.Done():
			wg.Wait()
			return
		case <-time.After(time.Until(start.Add(f.At))):
		}
		in.mu.Lock()
		busy := in.busy[f.Kind]
		in.busy[f.Kind] = true
		in.mu.Unlock()
		if busy {
			in.record(injected{fault: f, Start: time.Now(), End: time.Now(), Skipped: "one of its kind still running"})
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			ev := injected{fault: f, Start: time.Now()}
			if err := in.inject(f, &ev); err != nil {
				ev.Note = "error: " + err.Error()
				in.s.failf("fault %s on volume %d: %v", f.Kind, f.Volume, err)
			}
			ev.End = time.Now()
			in.record(ev)
			in.mu.Lock()
			in.busy[f.Kind] = false
			in.mu.Unlock()
		}()
	}
	wg.Wait()
}

func (in *injector) record(ev injected) {
	in.mu.Lock()
	defer in.mu.Unlock()
	in.done = append(in.done, ev)
	in.s.logf("fault %-13s vol=%d for=%v %s%s", ev.Kind, ev.Volume, ev.For, ev.Skipped, ev.Note)
}

// inject carries out one fault and returns when it is over.
func (in *injector) inject(f fault, ev *injected) error {
	s := in.s
	v := s.vols[f.Volume]
	switch f.Kind {
	case "fuse-kill":
		pid, err := s.fusePid(v.id, f.Alt)
		if err != nil || pid == 0 {
			ev.Skipped = fmt.Sprintf("no process (%v)", err)
			return nil
		}
		at := time.Now()
		if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
			ev.Skipped = err.Error()
			return nil
		}
		in.addKill(killAt{at: at, healed: time.Now()})
		ev.Note = fmt.Sprintf("pid %d standby=%v", pid, f.Alt)
	case "fuse-stop":
		pid, err := s.fusePid(v.id, false)
		if err != nil || pid == 0 {
			ev.Skipped = fmt.Sprintf("no process (%v)", err)
			return nil
		}
		at := time.Now()
		if err := syscall.Kill(pid, syscall.SIGSTOP); err != nil {
			ev.Skipped = err.Error()
			return nil
		}
		time.Sleep(f.For)
		if s.isFUSE(pid) {
			_ = syscall.Kill(pid, syscall.SIGCONT)
		}
		in.addKill(killAt{at: at, dead: time.Now(), healed: time.Now()})
		ev.Note = fmt.Sprintf("pid %d", pid)
	case "node-kill":
		s.nodeMu.Lock()
		defer s.nodeMu.Unlock()
		at := time.Now()
		if err := s.node.endNodeContainer(s.ctx); err != nil {
			return err
		}
		dead := time.Now()
		if err := s.node.launchNode(); err != nil {
			return err
		}
		err := s.waitAllHealthy(2 * time.Minute)
		in.addKill(killAt{at: at, dead: dead, healed: time.Now()})
		return err
	case "node-stop":
		s.nodeMu.Lock()
		defer s.nodeMu.Unlock()
		if err := s.node.node.Process.Signal(syscall.SIGSTOP); err != nil {
			return err
		}
		time.Sleep(f.For)
		return s.node.node.Process.Signal(syscall.SIGCONT)
	case "minio-restart":
		s.minioMu.Lock()
		defer s.minioMu.Unlock()
		s.srv.Stop()
		time.Sleep(f.For)
		if err := s.srv.Start(); err != nil {
			return err
		}
		// The restart ends when MinIO serves the volumes again, which
		// under load came up to 20 s after its health check answered.
		return s.storeServes(s.ctx)
	case "minio-stop":
		s.minioMu.Lock()
		defer s.minioMu.Unlock()
		if err := s.srv.Signal(syscall.SIGSTOP); err != nil {
			return err
		}
		time.Sleep(f.For)
		return s.srv.Signal(syscall.SIGCONT)
	case "cache-fill":
		n, err := fillToFloor(s.node.cacheRoot)
		if err != nil {
			return err
		}
		ev.Note = fmt.Sprintf("%d MiB", n>>20)
		time.Sleep(f.For)
		return os.Remove(filepath.Join(s.node.cacheRoot, fillerName))
	case "rotate":
		creds, err := s.sts.assume(s.ctx)
		if err != nil {
			return err
		}
		s.nodeMu.Lock()
		defer s.nodeMu.Unlock()
		v.pub.creds = creds
		ctx, cancel := context.WithTimeout(s.ctx, time.Minute)
		defer cancel()
		return s.node.call(ctx, func(ctx context.Context, c csi.NodeClient) error { return s.node.republish(ctx, c, v.pub) })
	case "remount":
		s.nodeMu.Lock()
		defer s.nodeMu.Unlock()
		at := time.Now()
		if err := abortConnection(s.ctx, v.pub.staging); err != nil {
			return err
		}
		err := s.waitHealthy(v, time.Minute)
		in.mu.Lock()
		in.remounts[f.Volume] = append(in.remounts[f.Volume], killAt{at: at, healed: time.Now()})
		in.mu.Unlock()
		return err
	case "cpu":
		b, err := startBurners(runtime.NumCPU())
		if err != nil {
			return err
		}
		time.Sleep(f.For)
		b.stop()
	}
	return nil
}

func (in *injector) addKill(k killAt) {
	in.mu.Lock()
	defer in.mu.Unlock()
	in.kills = append(in.kills, k)
}

// byKind counts the faults carried out (and skipped) by kind.
func (in *injector) byKind() (done, skipped map[string]int) {
	in.mu.Lock()
	defer in.mu.Unlock()
	done, skipped = map[string]int{}, map[string]int{}
	for _, ev := range in.done {
		if ev.Skipped != "" {
			skipped[ev.Kind]++
		} else {
			done[ev.Kind]++
		}
	}
	return done, skipped
}

// fillerName is the cache-fill fault's file in the cache root.
const fillerName = "soak-filler"

// fillToFloor allocates a file in dir's file system until only the
// cache's free-space floor (5%) is free, and returns its size.
func fillToFloor(dir string) (int64, error) {
	var st unix.Statfs_t
	if err := unix.Statfs(dir, &st); err != nil {
		return 0, err
	}
	total, free := int64(st.Blocks)*st.Bsize, int64(st.Bavail)*st.Bsize
	n := free - total*5/100
	if n <= 0 {
		return 0, nil
	}
	f, err := os.OpenFile(filepath.Join(dir, fillerName), os.O_CREATE|os.O_WRONLY, 0o600)
	if err != nil {
		return 0, err
	}
	defer func() { _ = f.Close() }()
	if err := unix.Fallocate(int(f.Fd()), 0, 0, n); err != nil {
		return 0, fmt.Errorf("fallocate %d bytes: %w", n, err)
	}
	return n, nil
}

// abortConnection aborts the FUSE connection mounted on path, as
// /sys/fs/fuse/connections/N/abort does: the mount answers ENOTCONN until
// it is mounted again.
func abortConnection(ctx context.Context, path string) error {
	// From the mount table: a stat would wait for the mount's server.
	dev, err := supervisor.NewLinuxKernel(nil).MountDev(ctx, path)
	if err != nil {
		return err
	}
	return fusectl.Abort(dev)
}

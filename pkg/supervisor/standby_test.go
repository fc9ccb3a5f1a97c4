package supervisor_test

import (
	"errors"
	"os"
	"slices"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/basin-csi/basin/pkg/supervisor"
	"github.com/basin-csi/basin/pkg/supervisor/supervisortest"
)

// standbys records the go-ahead pipes of the standby processes a fake
// Runner starts (the Manager closes its copy of the read end once the
// process started, as a real child keeps its own).
type standbys struct {
	mu    sync.Mutex // guards pipes
	pipes map[int]*os.File
}

func isStandby(p *supervisortest.Process) bool { return slices.Contains(p.Spec.Args, "--standby-fd") }

// withStandby enables standbys and records their pipes; onStart, if not
// nil, runs for every process started after that.
func withStandby(f *fixture, sb *standbys) {
	sb.pipes = map[int]*os.File{}
	f.runner.OnStart = func(p *supervisortest.Process) error {
		if !isStandby(p) {
			return nil
		}
		fd, err := syscall.Dup(int(p.Spec.ExtraFiles[1].Fd()))
		if err != nil {
			return err
		}
		sb.mu.Lock()
		sb.pipes[p.Pid()] = os.NewFile(uintptr(fd), "go-ahead")
		sb.mu.Unlock()
		return nil
	}
}

// goAhead reads what standby pid's pipe got: "g", or "" at its close.
func (sb *standbys) goAhead(t *testing.T, pid int) string {
	t.Helper()
	sb.mu.Lock()
	r := sb.pipes[pid]
	sb.mu.Unlock()
	if r == nil {
		t.Fatalf("no pipe of standby %d", pid)
	}
	_ = r.SetReadDeadline(time.Now().Add(5 * time.Second))
	var b [1]byte
	n, _ := r.Read(b[:])
	return string(b[:n])
}

// exited closes what the standby pid kept of its pipe, as its exit does.
func (sb *standbys) exited(pid int) {
	sb.mu.Lock()
	defer sb.mu.Unlock()
	_ = sb.pipes[pid].Close()
}

// stagedWithStandby stages request() on a Manager with standbys and waits
// until the standby was started; it returns the serving process and the
// standby.
func stagedWithStandby(t *testing.T, checkInterval time.Duration) (f *fixture, sb *standbys, serving, standby *supervisortest.Process) {
	t.Helper()
	f = newFixture(t, func(c *supervisor.Config) {
		c.Standby = true
		if checkInterval > 0 {
			c.CheckInterval = checkInterval
		}
	})
	sb = &standbys{}
	withStandby(f, sb)
	if err := f.m.Stage(t.Context(), request()); err != nil {
		t.Fatal(err)
	}
	serving = f.runner.Started()[0]
	waitFor(t, "a standby", func() bool {
		st, _ := f.m.Check(t.Context(), request().VolumeID)
		return st.Standby != 0
	})
	standby = f.runner.Last()
	if !isStandby(standby) {
		t.Fatalf("last process %v is no standby", standby.Spec.Args)
	}
	return f, sb, serving, standby
}

// TestStandbyTakesOver: the standby of a staged volume resumes the same
// connection (--resume, the same --session and descriptor), gets the
// go-ahead when the serving process dies and serves; a new standby is
// started for the next heal.
func TestStandbyTakesOver(t *testing.T) {
	f, sb, serving, standby := stagedWithStandby(t, 0)
	if !resumes(standby) || sessionOf(standby) != sessionOf(serving) || len(standby.Spec.ExtraFiles) != 2 ||
		standby.Spec.ExtraFiles[0] != serving.Spec.ExtraFiles[0] || !containsRun(standby.Spec.Args, []string{"--standby-fd", "4"}) {
		t.Fatalf("standby args %v, %d extra files: want --resume on session %s, the connection as 3, the pipe as 4",
			standby.Spec.Args, len(standby.Spec.ExtraFiles), sessionOf(serving))
	}
	serving.Exit(errors.New("signal: killed"))
	if got := sb.goAhead(t, standby.Pid()); got != "g" {
		t.Fatalf("standby read %q, want the go-ahead", got)
	}
	waitFor(t, "the heal", func() bool {
		st, _ := f.m.Check(t.Context(), request().VolumeID)
		return st.Heals == 1 && st.Healthy && st.Standby != 0 && st.Standby != standby.Pid()
	})
	st, _ := f.m.Check(t.Context(), request().VolumeID)
	if st.Pid != standby.Pid() || st.LastHeal.Method != "takeover" || !st.LastHeal.Standby {
		t.Errorf("status %+v, heal %+v: want the standby %d serving after a takeover by it", st, st.LastHeal, standby.Pid())
	}
	next := f.runner.Last()
	if !isStandby(next) || sessionOf(next) != sessionOf(serving) {
		t.Errorf("next standby args %v", next.Spec.Args)
	}
	// Two serving processes and two standbys at most: no process was
	// started for the heal itself.
	if n := len(f.runner.Started()); n != 3 {
		t.Errorf("%d processes started, want 3", n)
	}
}

// TestStandbyFallsBack: a standby that died before it was needed is not
// used: the heal starts a process, as without standbys.
func TestStandbyFallsBack(t *testing.T) {
	f, sb, serving, standby := stagedWithStandby(t, time.Hour) // no check wakes the watchdog
	standby.Exit(errors.New("signal: killed"))
	sb.exited(standby.Pid())
	waitFor(t, "the standby seen gone", func() bool {
		st, _ := f.m.Check(t.Context(), request().VolumeID)
		return st.Standby == 0
	})
	serving.Exit(errors.New("signal: killed"))
	waitFor(t, "the heal", func() bool {
		st, _ := f.m.Check(t.Context(), request().VolumeID)
		return st.Heals == 1 && st.Healthy
	})
	st, _ := f.m.Check(t.Context(), request().VolumeID)
	p := f.runner.Started()[2]
	if st.LastHeal.Method != "takeover" || st.LastHeal.Standby || st.Pid != p.Pid() || isStandby(p) || !resumes(p) {
		t.Errorf("heal %+v by %v, want a takeover by a process started for it", st.LastHeal, p.Spec.Args)
	}
}

// TestStandbyFailsThenProcess: a standby that exits after its go-ahead
// instead of serving is replaced by a process started then.
func TestStandbyFailsThenProcess(t *testing.T) {
	f, sb, serving, standby := stagedWithStandby(t, time.Hour)
	sb.mu.Lock()
	pipe := sb.pipes[standby.Pid()]
	sb.mu.Unlock()
	go func() {
		var b [1]byte
		if n, _ := pipe.Read(b[:]); n == 1 {
			standby.Exit(errors.New("exit status 1"))
		}
	}()
	f.kernel.SetHealth("/staging", supervisortest.Hung) // nobody answers until a process is started
	onStart := f.runner.OnStart
	f.runner.OnStart = func(p *supervisortest.Process) error {
		if !isStandby(p) {
			f.kernel.SetHealth("/staging", supervisortest.Healthy)
		}
		return onStart(p)
	}
	serving.Exit(errors.New("signal: killed"))
	waitFor(t, "the heal", func() bool {
		st, _ := f.m.Check(t.Context(), request().VolumeID)
		return st.Heals == 1 && st.Healthy
	})
	st, _ := f.m.Check(t.Context(), request().VolumeID)
	if st.LastHeal.Method != "takeover" || st.LastHeal.Standby || st.Pid == standby.Pid() {
		t.Errorf("heal %+v, pid %d: want a takeover by a process started for it", st.LastHeal, st.Pid)
	}
}

// TestStandbyReleased: the standby holds the connection too, so it is
// stopped (its pipe closed, then killed) before a remount aborts the
// connection and before an unstage; the remount gets a standby of its
// own.
func TestStandbyReleased(t *testing.T) {
	t.Run("remount", func(t *testing.T) {
		f, sb, serving, standby := stagedWithStandby(t, 0)
		f.kernel.SetHealth("/staging", supervisortest.Broken)
		if got := sb.goAhead(t, standby.Pid()); got != "" {
			t.Fatalf("standby read %q, want its pipe closed", got)
		}
		<-standby.Exited()
		waitFor(t, "a remount with a standby", func() bool {
			st, _ := f.m.Check(t.Context(), request().VolumeID)
			return st.Heals == 1 && st.Healthy && st.Standby != 0
		})
		st, _ := f.m.Check(t.Context(), request().VolumeID)
		if st.LastHeal.Method != "remount" || st.LastHeal.Standby {
			t.Errorf("heal %+v, want a remount", st.LastHeal)
		}
		if next := f.runner.Last(); sessionOf(next) == sessionOf(serving) {
			t.Errorf("the new standby would resume the old connection: %v", next.Spec.Args)
		}
	})
	t.Run("unstage", func(t *testing.T) {
		f, sb, _, standby := stagedWithStandby(t, 0)
		if err := f.m.Unstage(t.Context(), request().VolumeID, "/staging"); err != nil {
			t.Fatal(err)
		}
		select {
		case <-standby.Exited():
		default:
			t.Error("the standby outlived the unstage")
		}
		if got := sb.goAhead(t, standby.Pid()); got != "" {
			t.Errorf("standby read %q, want its pipe closed", got)
		}
	})
}

// TestNoStandbyByDefault: without Config.Standby only the serving process
// runs.
func TestNoStandbyByDefault(t *testing.T) {
	f := newFixture(t)
	if err := f.m.Stage(t.Context(), request()); err != nil {
		t.Fatal(err)
	}
	time.Sleep(60 * time.Millisecond) // several watchdog periods
	st, _ := f.m.Check(t.Context(), request().VolumeID)
	if n := len(f.runner.Started()); n != 1 || st.Standby != 0 {
		t.Errorf("%d processes, standby %d: want the serving one alone", n, st.Standby)
	}
}

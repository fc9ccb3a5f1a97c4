package supervisor_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/basin-csi/basin/internal/bdi"
	"github.com/basin-csi/basin/pkg/mountspec"
	"github.com/basin-csi/basin/pkg/objstore"
	"github.com/basin-csi/basin/pkg/supervisor"
	"github.com/basin-csi/basin/pkg/supervisor/supervisortest"
)

type fixture struct {
	m      *supervisor.Manager
	runner *supervisortest.Runner
	kernel *supervisortest.Kernel

	mu    sync.Mutex // guards binds
	binds []supervisor.Bind
}

// newFixture starts a Manager on fakes; opts may change its Config (a
// Kernel set there must be a *supervisortest.Kernel).
func newFixture(t *testing.T, opts ...func(*supervisor.Config)) *fixture {
	t.Helper()
	f := &fixture{runner: &supervisortest.Runner{}, kernel: supervisortest.NewKernel()}
	cfg := supervisor.Config{
		Binary: "/bin/csi-driver", Runner: f.runner, Kernel: f.kernel,
		CredentialsDir: filepath.Join(t.TempDir(), "credentials"), Env: []string{"PATH=/bin"},
		Binds: func(string) []supervisor.Bind {
			f.mu.Lock()
			defer f.mu.Unlock()
			return slices.Clone(f.binds)
		},
		ReadyTimeout: 2 * time.Second, CheckInterval: 20 * time.Millisecond, CheckTimeout: 50 * time.Millisecond,
		StopTimeout: time.Second, MaxHealBackoff: 50 * time.Millisecond, TakeoverPatience: 500 * time.Millisecond,
	}
	for _, o := range opts {
		o(&cfg)
	}
	f.kernel = cfg.Kernel.(*supervisortest.Kernel)
	m, err := supervisor.NewManager(cfg)
	if err != nil {
		t.Fatal(err)
	}
	f.m = m
	t.Cleanup(m.Close)
	return f
}

func request() supervisor.Request {
	spec := mountspec.Default()
	spec.Bucket, spec.Prefix, spec.CacheSize = "bucket", "vol/", 1<<30
	return supervisor.Request{
		VolumeID: "s3/1pds/r/fp/bucket/vol/", StagingPath: "/staging", CacheDir: "/cache/v",
		Spec:        spec,
		Credentials: objstore.Credentials{AccessKeyID: "AKIDEXAMPLE", SecretAccessKey: "very-secret-key"},
	}
}

// waitFor polls cond (a test helper, not production code) for up to 5s.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func TestStageStartsServingProcess(t *testing.T) {
	f := newFixture(t)
	req := request()
	if err := f.m.Stage(t.Context(), req); err != nil {
		t.Fatal(err)
	}
	p := f.runner.Last()
	if p == nil {
		t.Fatal("no process started")
	}
	args := p.Spec.Args
	for _, want := range [][]string{{"mount", "--fd", "3"}, {"--cache-dir", "/cache/v"}, {"--volume-id", req.VolumeID}} {
		if !containsRun(args, want) {
			t.Errorf("args %q lack %q", args, want)
		}
	}
	if strings.Contains(strings.Join(args, " "), "very-secret-key") {
		t.Error("a secret is in argv")
	}
	// The spec and the credentials reach the child in the hand-off file.
	i := slices.Index(args, "--spec-file")
	if i < 0 || i+1 >= len(args) {
		t.Fatalf("args %q lack --spec-file", args)
	}
	h, err := mountspec.ReadHandoffFile(args[i+1])
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(h.Spec, req.Spec) || !h.Credentials.Equal(req.Credentials) {
		t.Errorf("hand-off %+v, want the request's spec and credentials", h.Spec)
	}
	if len(p.Spec.ExtraFiles) != 1 {
		t.Errorf("%d extra files, want the FUSE descriptor", len(p.Spec.ExtraFiles))
	}
	mnt, ok := f.kernel.Mounted("/staging")
	if !ok || mnt.Source != "fuse" {
		t.Errorf("staging mount = %+v, %v", mnt, ok)
	}
	if ra := f.kernel.ReadAhead(mnt.Dev); ra != bdi.DefaultReadAhead {
		t.Errorf("read-ahead %d, want %d", ra, bdi.DefaultReadAhead)
	}
	st, err := f.m.Check(t.Context(), req.VolumeID)
	if err != nil || !st.Healthy || st.Pid != p.Pid() || st.Heals != 0 {
		t.Errorf("Check = %+v, %v", st, err)
	}
}

func containsRun(args, run []string) bool {
	for i := 0; i+len(run) <= len(args); i++ {
		if slices.Equal(args[i:i+len(run)], run) {
			return true
		}
	}
	return false
}

func TestStageIdempotentAndConflict(t *testing.T) {
	f := newFixture(t)
	req := request()
	if err := f.m.Stage(t.Context(), req); err != nil {
		t.Fatal(err)
	}
	if err := f.m.Stage(t.Context(), req); err != nil {
		t.Errorf("second Stage: %v", err)
	}
	if n := len(f.runner.Started()); n != 1 {
		t.Errorf("%d processes after two Stages, want 1", n)
	}
	other := req
	other.StagingPath = "/elsewhere"
	if err := f.m.Stage(t.Context(), other); !errors.Is(err, supervisor.ErrConflict) {
		t.Errorf("Stage elsewhere: %v, want ErrConflict", err)
	}
}

func TestStageFailsWhenChildExitsEarly(t *testing.T) {
	f := newFixture(t)
	f.kernel.SetHealth("/staging", supervisortest.Hung) // never answers...
	f.runner.OnStart = func(p *supervisortest.Process) error {
		f.kernel.SetHealth("/staging", supervisortest.Hung)
		go func() {
			_, _ = p.Spec.Output.Write([]byte("open s3://bucket/vol/: access denied\n"))
			p.Exit(errors.New("exit status 1"))
		}()
		return nil
	}
	err := f.m.Stage(t.Context(), request())
	if !errors.Is(err, supervisor.ErrExited) {
		t.Fatalf("Stage: %v, want ErrExited", err)
	}
	if !strings.Contains(err.Error(), "access denied") {
		t.Errorf("error %q lacks the child's last output", err)
	}
	if _, ok := f.kernel.Mounted("/staging"); ok {
		t.Error("a failed Stage left the staging mount")
	}
	if _, err := f.m.Check(t.Context(), request().VolumeID); !errors.Is(err, supervisor.ErrNotStaged) {
		t.Errorf("Check after failed Stage: %v", err)
	}
}

func TestStageReadyBoundedByContext(t *testing.T) {
	f := newFixture(t)
	f.runner.OnStart = func(*supervisortest.Process) error {
		f.kernel.SetHealth("/staging", supervisortest.Hung)
		return nil
	}
	ctx, cancel := context.WithTimeout(t.Context(), 100*time.Millisecond)
	defer cancel()
	err := f.m.Stage(ctx, request())
	if !errors.Is(err, supervisor.ErrTimeout) {
		t.Fatalf("Stage: %v, want ErrTimeout", err)
	}
	p := f.runner.Last()
	if sigs := p.Signals(); !slices.ContainsFunc(sigs, func(s os.Signal) bool { return s == syscall.SIGKILL }) {
		t.Errorf("the hung child got %v, want SIGKILL", sigs)
	}
}

// resumes reports whether p was started to take over a connection.
func resumes(p *supervisortest.Process) bool { return slices.Contains(p.Spec.Args, "--resume") }

// sessionOf is the --session argument of p.
func sessionOf(p *supervisortest.Process) string {
	if i := slices.Index(p.Spec.Args, "--session"); i >= 0 && i+1 < len(p.Spec.Args) {
		return p.Spec.Args[i+1]
	}
	return ""
}

func TestWatchdogHeals(t *testing.T) {
	for _, tc := range []struct {
		name   string
		break_ func(f *fixture, p *supervisortest.Process)
		cause  string
		method string // "takeover" keeps the mount; "remount" replaces it
	}{
		{"child exit", func(_ *fixture, p *supervisortest.Process) { p.Exit(errors.New("signal: killed")) }, "exited", "takeover"},
		{"broken mount", func(f *fixture, _ *supervisortest.Process) { f.kernel.SetHealth("/staging", supervisortest.Broken) }, "broken", "remount"},
		{"hung mount", func(f *fixture, _ *supervisortest.Process) { f.kernel.SetHealth("/staging", supervisortest.Hung) }, "did not answer", "takeover"},
		// EIO from a live connection: the server misbehaves, the
		// connection can be taken over (open files keep working).
		{"failing mount", func(f *fixture, _ *supervisortest.Process) { f.kernel.SetHealth("/staging", supervisortest.Failing) }, "input/output error", "takeover"},
		{"takeover fails", func(f *fixture, p *supervisortest.Process) {
			f.runner.OnStart = func(np *supervisortest.Process) error {
				if resumes(np) {
					return supervisortest.ErrStartRefused
				}
				return nil
			}
			p.Exit(errors.New("signal: killed"))
		}, "exited", "remount"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t)
			f.binds = []supervisor.Bind{{Target: "/pod1", ReadOnly: false}, {Target: "/pod2", ReadOnly: true}}
			req := request()
			if err := f.m.Stage(t.Context(), req); err != nil {
				t.Fatal(err)
			}
			first := f.runner.Last()
			if resumes(first) || sessionOf(first) == "" || slices.Contains(first.Spec.Args, "--no-bucket-check") {
				t.Fatalf("first process args %v: want --session, no --resume, and the bucket checked", first.Spec.Args)
			}
			if tc.name == "hung mount" || tc.name == "failing mount" {
				// The successor answers on the same connection.
				f.runner.OnStart = func(*supervisortest.Process) error {
					f.kernel.SetHealth("/staging", supervisortest.Healthy)
					return nil
				}
			}
			tc.break_(f, first)
			waitFor(t, "a heal", func() bool {
				st, _ := f.m.Check(t.Context(), req.VolumeID)
				return st.Heals == 1 && st.Healthy
			})
			st, _ := f.m.Check(t.Context(), req.VolumeID)
			if st.LastHeal == nil || !strings.Contains(st.LastHeal.Cause, tc.cause) || st.LastHeal.Err != "" || st.LastHeal.Method != tc.method {
				t.Errorf("LastHeal = %+v, want method %s and a cause mentioning %q", st.LastHeal, tc.method, tc.cause)
			}
			select {
			case <-first.Exited():
			default:
				t.Error("the old process still runs")
			}
			last := f.runner.Last()
			if st.Pid != last.Pid() {
				t.Errorf("Pid %d, want the new process %d", st.Pid, last.Pid())
			}
			for _, b := range f.binds {
				if m, ok := f.kernel.Mounted(b.Target); !ok || m.Source != "/staging" || m.ReadOnly != b.ReadOnly {
					t.Errorf("target %s: %+v, %v; want bound (ro=%v)", b.Target, m, ok, b.ReadOnly)
				}
			}
			started := f.runner.Started()
			fuse, _ := f.kernel.Counts()
			switch tc.method {
			case "takeover":
				if len(started) != 2 || !resumes(last) || sessionOf(last) != sessionOf(first) {
					t.Errorf("%d processes, last args %v: want 2, the last resuming session %s", len(started), last.Spec.Args, sessionOf(first))
				}
				if fuse != 1 {
					t.Errorf("%d FUSE mounts, want 1 (the connection is kept)", fuse)
				}
			case "remount":
				if resumes(last) || sessionOf(last) == sessionOf(first) {
					t.Errorf("last args %v: want a fresh session", last.Spec.Args)
				}
				// The pods use the volume already: the cache serves them
				// even while the store is down.
				if !slices.Contains(last.Spec.Args, "--no-bucket-check") {
					t.Errorf("remount args %v: want --no-bucket-check", last.Spec.Args)
				}
				if fuse != 2 {
					t.Errorf("%d FUSE mounts, want 2 (remount)", fuse)
				}
			}
			if f.m.Heals() != 1 {
				t.Errorf("Heals() = %d", f.m.Heals())
			}
		})
	}
}

func TestWatchdogRetriesFailedHeal(t *testing.T) {
	f := newFixture(t)
	req := request()
	if err := f.m.Stage(t.Context(), req); err != nil {
		t.Fatal(err)
	}
	f.kernel.FailMounts(errors.New("no /dev/fuse"))
	f.runner.OnStart = func(p *supervisortest.Process) error {
		if resumes(p) {
			return supervisortest.ErrStartRefused // no takeover either
		}
		return nil
	}
	f.runner.Last().Exit(errors.New("signal: killed"))
	waitFor(t, "a failed heal", func() bool {
		st, _ := f.m.Check(t.Context(), req.VolumeID)
		return st.Heals >= 1 && !st.Healthy && st.LastHeal != nil && st.LastHeal.Err != ""
	})
	f.kernel.FailMounts(nil)
	waitFor(t, "a successful retry", func() bool {
		st, _ := f.m.Check(t.Context(), req.VolumeID)
		return st.Healthy && st.Pid != 0
	})
}

func TestUnstage(t *testing.T) {
	f := newFixture(t)
	req := request()
	if err := f.m.Stage(t.Context(), req); err != nil {
		t.Fatal(err)
	}
	p := f.runner.Last()
	if err := f.m.Unstage(t.Context(), req.VolumeID, req.StagingPath); err != nil {
		t.Fatal(err)
	}
	if _, ok := f.kernel.Mounted("/staging"); ok {
		t.Error("staging still mounted")
	}
	if sigs := p.Signals(); len(sigs) == 0 || sigs[0] != syscall.SIGTERM {
		t.Errorf("signals %v, want SIGTERM first", sigs)
	}
	if _, err := f.m.Check(t.Context(), req.VolumeID); !errors.Is(err, supervisor.ErrNotStaged) {
		t.Errorf("Check after Unstage: %v", err)
	}
	// Again, and for a volume never staged: success.
	if err := f.m.Unstage(t.Context(), req.VolumeID, req.StagingPath); err != nil {
		t.Errorf("second Unstage: %v", err)
	}
	time.Sleep(60 * time.Millisecond) // several watchdog periods: no heal of an unstaged volume
	if n := len(f.runner.Started()); n != 1 {
		t.Errorf("%d processes started, want 1", n)
	}
}

// exitStatus is a Wait error with an exit code, like *exec.ExitError.
type exitStatus int

func (e exitStatus) Error() string { return fmt.Sprintf("exit status %d", int(e)) }
func (e exitStatus) ExitCode() int { return int(e) }

// TestStageFailureNamesTheCause: a child that gives up before serving with
// one of mountspec's exit codes fails Stage with the objstore sentinel the
// code stands for, so the driver can answer NotFound, PermissionDenied or
// Unavailable.
func TestStageFailureNamesTheCause(t *testing.T) {
	for _, tc := range []struct {
		code int
		want error
	}{
		{mountspec.ExitNotFound, objstore.ErrNotFound},
		{mountspec.ExitAccessDenied, objstore.ErrAccessDenied},
		{mountspec.ExitUnavailable, objstore.ErrUnavailable},
	} {
		t.Run(tc.want.Error(), func(t *testing.T) {
			f := newFixture(t)
			f.runner.OnStart = func(p *supervisortest.Process) error {
				f.kernel.SetHealth("/staging", supervisortest.Hung)
				go p.Exit(exitStatus(tc.code))
				return nil
			}
			err := f.m.Stage(t.Context(), request())
			if !errors.Is(err, supervisor.ErrExited) || !errors.Is(err, tc.want) {
				t.Errorf("Stage: %v, want ErrExited and %v", err, tc.want)
			}
		})
	}
}

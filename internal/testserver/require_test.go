package testserver

import (
	"fmt"
	"runtime"
	"testing"
)

// recorder is a testing.TB that records how a helper stopped the test.
type recorder struct {
	testing.TB        // nil: calling anything else panics
	stopped    string // "fatal", "skip" or "" (ran on)
	msg        string
}

func (r *recorder) Helper() {}
func (r *recorder) Fatalf(format string, args ...any) {
	r.stopped, r.msg = "fatal", fmt.Sprintf(format, args...)
	runtime.Goexit()
}
func (r *recorder) Skipf(format string, args ...any) {
	r.stopped, r.msg = "skip", fmt.Sprintf(format, args...)
	runtime.Goexit()
}

// run calls f with a recorder in its own goroutine, as the testing
// package runs a test, and returns how it stopped.
func run(f func(testing.TB)) *recorder {
	r := &recorder{}
	done := make(chan struct{})
	go func() { defer close(done); f(r) }()
	<-done
	return r
}

func TestMissingDependencyFailsUnderCI(t *testing.T) {
	for _, tt := range []struct {
		name string
		f    func(testing.TB)
	}{
		{"Unavailable", func(tb testing.TB) { Unavailable(tb, "no %s", "server") }},
		{"RequireBinary", func(tb testing.TB) { RequireBinary(tb, "basin-no-such-tool", InstallHint) }},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Setenv("CI", "true")
			if r := run(tt.f); r.stopped != "fatal" {
				t.Errorf("under CI=true: stopped %q, want fatal", r.stopped)
			}
			t.Setenv("CI", "")
			if r := run(tt.f); r.stopped != "skip" {
				t.Errorf("without CI: stopped %q, want skip", r.stopped)
			}
		})
	}
}

func TestOptInSkipsEvenUnderCI(t *testing.T) {
	t.Setenv("CI", "true")
	t.Setenv("BASIN_TEST_OPT_IN", "")
	if r := run(func(tb testing.TB) { OptIn(tb, "BASIN_TEST_OPT_IN", "make x") }); r.stopped != "skip" {
		t.Errorf("unset: stopped %q, want skip", r.stopped)
	}
	t.Setenv("BASIN_TEST_OPT_IN", "7")
	var got string
	if r := run(func(tb testing.TB) { got = OptIn(tb, "BASIN_TEST_OPT_IN", "make x") }); r.stopped != "" || got != "7" {
		t.Errorf("set: stopped %q, value %q; want to run on with 7", r.stopped, got)
	}
}

func TestRequireBinaryFindsInstalledTools(t *testing.T) {
	t.Setenv("CI", "true")
	var got string
	if r := run(func(tb testing.TB) { got = RequireBinary(tb, "sh", InstallHint) }); r.stopped != "" || got == "" {
		t.Errorf("sh: stopped %q (%s), path %q", r.stopped, r.msg, got)
	}
}

package supervisortest

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sync"
	"syscall"

	"github.com/basin-csi/basin/pkg/supervisor"
)

// Runner is a fake supervisor.ProcessRunner. Every started process stays
// "running" until it is signalled or Exit is called.
type Runner struct {
	// OnStart, if set, runs for every start with the new process; an
	// error fails the start.
	OnStart func(p *Process) error

	mu    sync.Mutex // guards procs, next
	procs []*Process
	next  int
}

var _ supervisor.ProcessRunner = (*Runner)(nil)

// Start implements supervisor.ProcessRunner.
func (r *Runner) Start(_ context.Context, spec supervisor.ProcessSpec) (supervisor.Process, error) {
	r.mu.Lock()
	r.next++
	p := &Process{Spec: spec, pid: 1000 + r.next, exited: make(chan struct{})}
	r.mu.Unlock()
	if r.OnStart != nil {
		if err := r.OnStart(p); err != nil {
			return nil, err
		}
	}
	r.mu.Lock()
	r.procs = append(r.procs, p)
	r.mu.Unlock()
	return p, nil
}

// Started returns the processes started so far, oldest first.
func (r *Runner) Started() []*Process {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]*Process(nil), r.procs...)
}

// Last returns the latest process, or nil.
func (r *Runner) Last() *Process {
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.procs) == 0 {
		return nil
	}
	return r.procs[len(r.procs)-1]
}

// Process is a fake running process.
type Process struct {
	// Spec is what it was started with.
	Spec supervisor.ProcessSpec

	// constant
	pid    int
	exited chan struct{}

	mu      sync.Mutex // guards err, signals, done
	err     error
	signals []os.Signal
	done    bool
}

// Pid implements supervisor.Process.
func (p *Process) Pid() int { return p.pid }

// Signal records sig; SIGTERM and SIGKILL end the process.
func (p *Process) Signal(sig os.Signal) error {
	p.mu.Lock()
	p.signals = append(p.signals, sig)
	p.mu.Unlock()
	if sig == syscall.SIGTERM || sig == syscall.SIGKILL {
		p.Exit(fmt.Errorf("signal: %v", sig))
	}
	return nil
}

// Wait implements supervisor.Process.
func (p *Process) Wait() error {
	<-p.exited
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.err
}

// Exit ends the process with err (nil: exit status 0). Later calls do
// nothing.
func (p *Process) Exit(err error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.done {
		return
	}
	p.done, p.err = true, err
	close(p.exited)
}

// Exited is closed when the process ended.
func (p *Process) Exited() <-chan struct{} { return p.exited }

// Signals returns the signals received.
func (p *Process) Signals() []os.Signal {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]os.Signal(nil), p.signals...)
}

// ErrStartRefused is what a Runner's OnStart may return.
var ErrStartRefused = errors.New("supervisortest: start refused")

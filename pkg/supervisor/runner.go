package supervisor

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"syscall"
)

// ProcessSpec is one process to start.
type ProcessSpec struct {
	// Path is the executable; Args are its arguments (without argv[0]).
	// Args never hold a secret.
	Path string
	Args []string
	// Env is the complete environment.
	Env []string
	// ExtraFiles become descriptors 3, 4, ... of the child.
	ExtraFiles []*os.File
	// Output receives the child's stdout and stderr.
	Output io.Writer
}

// Process is a started child.
type Process interface {
	// Pid is the process ID.
	Pid() int
	// Signal sends sig to the process.
	Signal(sig os.Signal) error
	// Wait waits for the process to exit and reports how it ended. The
	// Manager calls it exactly once, from its own goroutine.
	Wait() error
}

// ProcessRunner starts processes. The Manager uses ExecRunner; tests use
// supervisortest.Runner.
type ProcessRunner interface {
	// Start starts spec. ctx bounds the start only, never the process's
	// lifetime: FUSE processes outlive requests.
	Start(ctx context.Context, spec ProcessSpec) (Process, error)
}

// ExecRunner starts real processes with os/exec.
type ExecRunner struct{}

var _ ProcessRunner = ExecRunner{}

// Start starts spec in its own process group, so a terminal's signals to
// the node plugin do not reach its FUSE processes.
func (ExecRunner) Start(ctx context.Context, spec ProcessSpec) (Process, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	cmd := exec.Command(spec.Path, spec.Args...)
	cmd.Env = spec.Env
	cmd.ExtraFiles = spec.ExtraFiles
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	// Our own pipe, copied in the background: Wait must report the exit
	// at once (the watchdog heals on it), not when the output drained.
	var pr, pw *os.File
	if spec.Output != nil {
		var err error
		if pr, pw, err = os.Pipe(); err != nil {
			return nil, fmt.Errorf("supervisor: start %s: %w", spec.Path, err)
		}
		cmd.Stdout, cmd.Stderr = pw, pw
	}
	err := cmd.Start()
	if pw != nil {
		_ = pw.Close()
	}
	if err != nil {
		if pr != nil {
			_ = pr.Close()
		}
		return nil, fmt.Errorf("supervisor: start %s: %w", spec.Path, err)
	}
	p := execProcess{cmd: cmd, drained: make(chan struct{})}
	if pr != nil {
		go func() {
			defer close(p.drained)
			defer func() { _ = pr.Close() }()
			_, _ = io.Copy(spec.Output, pr)
		}()
	} else {
		close(p.drained)
	}
	return p, nil
}

// outputDrainer is a Process whose output is copied in the background:
// Drained is closed once all of it reached ProcessSpec.Output (at the
// child's exit, unless a grandchild holds the pipe open).
type outputDrainer interface {
	Drained() <-chan struct{}
}

type execProcess struct {
	cmd     *exec.Cmd
	drained chan struct{}
}

func (p execProcess) Drained() <-chan struct{} { return p.drained }

func (p execProcess) Pid() int                   { return p.cmd.Process.Pid }
func (p execProcess) Signal(sig os.Signal) error { return p.cmd.Process.Signal(sig) }
func (p execProcess) Wait() error                { return p.cmd.Wait() }

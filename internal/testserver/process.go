package testserver

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"sync"
	"syscall"
	"time"
)

// process is one server child process.
type process struct {
	cmd *exec.Cmd
	// guarded by mu: output is written by the child's pipes.
	mu     sync.Mutex
	output bytes.Buffer
	done   chan struct{}
}

func (p *process) Write(b []byte) (int, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.output.Len() < 1<<20 {
		p.output.Write(b)
	}
	return len(b), nil
}

func (p *process) log() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.output.String()
}

// freePort asks the kernel for an unused port on host.
func freePort(host string) (int, error) {
	l, err := net.Listen("tcp", net.JoinHostPort(host, "0"))
	if err != nil {
		return 0, err
	}
	defer func() { _ = l.Close() }()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// startProcess runs bin with args and env, then polls readyURL until it
// answers with a status below 500 or the deadline passes.
func startProcess(bin string, args, env []string, readyURL string) (*process, error) {
	p := &process{done: make(chan struct{})}
	p.cmd = exec.Command(bin, args...)
	p.cmd.Env = append(os.Environ(), env...)
	p.cmd.Stdout = p
	p.cmd.Stderr = p
	p.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := p.cmd.Start(); err != nil {
		return nil, fmt.Errorf("start %s: %w", bin, err)
	}
	go func() { _ = p.cmd.Wait(); close(p.done) }()

	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	client := &http.Client{Timeout: 2 * time.Second}
	for {
		select {
		case <-p.done:
			return nil, fmt.Errorf("%s exited early: %s", bin, p.log())
		case <-ctx.Done():
			p.stop()
			return nil, fmt.Errorf("%s not ready after 60s: %s", bin, p.log())
		case <-time.After(100 * time.Millisecond):
		}
		resp, err := client.Get(readyURL)
		if err == nil {
			_ = resp.Body.Close()
			if resp.StatusCode < 500 {
				return p, nil
			}
		}
	}
}

// stop kills the process group and waits for the child.
func (p *process) stop() {
	if p == nil || p.cmd.Process == nil {
		return
	}
	_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGTERM)
	select {
	case <-p.done:
	case <-time.After(5 * time.Second):
		_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL)
		<-p.done
	}
}

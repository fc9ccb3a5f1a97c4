package scenario

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// TorchConfig says how to run the DataLoader script.
type TorchConfig struct {
	// Python is the interpreter with torch installed (Debian's
	// python3-torch lives in /usr/bin/python3).
	Python string
	// Script is bench/torch_epoch.py.
	Script  string
	Workers int
	Batch   int
	Seed    uint64
	// ImageFolder makes the workers decode an ImageFolder of JPEGs
	// (torchvision) instead of reading raw files.
	ImageFolder bool
}

// ErrNoTorch means the interpreter cannot import torch (or torchvision).
var ErrNoTorch = errors.New("scenario: python cannot import torch")

// CheckTorch verifies that cfg.Python can import torch (and torchvision
// for an ImageFolder).
func CheckTorch(ctx context.Context, cfg TorchConfig) error {
	ctx, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	imports := "import torch"
	if cfg.ImageFolder {
		imports += ", torchvision, PIL"
	}
	out, err := exec.CommandContext(ctx, cfg.Python, "-c", imports+"; print(torch.__version__)").CombinedOutput()
	if err != nil {
		return fmt.Errorf("%w: %s: %v: %s", ErrNoTorch, cfg.Python, err, strings.TrimSpace(string(out)))
	}
	return nil
}

// TorchSession runs bench/torch_epoch.py over one directory: torch is
// imported and the directory listed once, then each Epoch is one pass of
// the DataLoader, timed by the script. Keeping the interpreter between the
// cold and the warm epoch keeps its start-up out of both. An epoch stopped
// at its deadline kills the interpreter; the next Epoch starts another.
type TorchSession struct {
	// constant
	cfg TorchConfig
	dir string

	proc *torchProc // nil after a kill
}

// torchProc is one interpreter.
type torchProc struct {
	// constant
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	lines  <-chan string // stdout lines; closed at EOF
	stderr *tailBuffer
	done   chan struct{} // closed when the process has exited
}

// torchLine is one JSON line of the script.
type torchLine struct {
	Ready    bool    `json:"ready"`
	Progress bool    `json:"progress"`
	Files    int64   `json:"files"`
	Bytes    int64   `json:"bytes"`
	Seconds  float64 `json:"seconds"`
}

// StartTorch starts the script over dir and waits, within ctx, until it
// has imported torch and listed dir.
func StartTorch(ctx context.Context, cfg TorchConfig, dir string) (*TorchSession, error) {
	p, err := startTorchProc(ctx, cfg, dir)
	if err != nil {
		return nil, err
	}
	return &TorchSession{cfg: cfg, dir: dir, proc: p}, nil
}

func startTorchProc(ctx context.Context, cfg TorchConfig, dir string) (*torchProc, error) {
	args := []string{cfg.Script, "--root", dir, "--progress",
		"--workers", strconv.Itoa(cfg.Workers), "--batch", strconv.Itoa(cfg.Batch),
		"--seed", strconv.FormatUint(cfg.Seed%(1<<62), 10)}
	if cfg.ImageFolder {
		args = append(args, "--imagefolder")
	}
	cmd := exec.Command(cfg.Python, args...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	t := &torchProc{cmd: cmd, stdin: stdin, stderr: &tailBuffer{}, done: make(chan struct{})}
	cmd.Stderr = t.stderr
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("torch: start %s: %w", cfg.Python, err)
	}
	// The script prints one line per request, so the buffer never fills
	// and the reader never blocks; Wait comes after stdout is drained.
	lines := make(chan string, 16)
	t.lines = lines
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			lines <- sc.Text()
		}
		close(lines)
		_ = cmd.Wait()
		close(t.done)
	}()
	if _, err := t.next(ctx); err != nil {
		t.close()
		return nil, err
	}
	return t, nil
}

// Epoch runs one epoch. At the deadline it kills the interpreter and
// returns the rate of the last progress line, marked partial; the next
// Epoch starts a new interpreter first (not timed: the script times the
// epoch itself).
func (t *TorchSession) Epoch(ctx context.Context) (Measure, error) {
	if t.proc == nil {
		p, err := startTorchProc(ctx, t.cfg, t.dir)
		if err != nil {
			return Measure{}, err
		}
		t.proc = p
	}
	p := t.proc
	if _, err := io.WriteString(p.stdin, "epoch\n"); err != nil {
		return Measure{}, fmt.Errorf("torch: %w: %s", err, p.stderr.String())
	}
	var last torchLine
	for {
		r, err := p.next(ctx)
		if err != nil {
			if ctx.Err() != nil {
				t.proc = nil // killed by next
				m := last.measure()
				return m, Stopped(ctx, &m)
			}
			return Measure{}, err
		}
		if !r.Progress {
			return r.measure(), nil
		}
		last = r
	}
}

func (r torchLine) measure() Measure {
	return Measure{Bytes: r.Bytes, Files: r.Files, Elapsed: time.Duration(r.Seconds * float64(time.Second))}
}

// next reads the script's next JSON line; at ctx's end it kills the
// script.
func (t *torchProc) next(ctx context.Context) (torchLine, error) {
	var r torchLine
	select {
	case line, ok := <-t.lines:
		if !ok {
			<-t.done
			return r, fmt.Errorf("torch: script ended: %v: %s", t.cmd.ProcessState, t.stderr.String())
		}
		if err := json.Unmarshal([]byte(line), &r); err != nil {
			return r, fmt.Errorf("torch: bad line %q: %w", line, err)
		}
		return r, nil
	case <-ctx.Done():
		t.kill()
		return r, fmt.Errorf("torch: %w", ctx.Err())
	}
}

// Close ends the script (end of stdin) and waits for it.
func (t *TorchSession) Close() {
	if t.proc != nil {
		t.proc.close()
		t.proc = nil
	}
}

func (t *torchProc) close() {
	_ = t.stdin.Close()
	select {
	case <-t.done:
	case <-time.After(30 * time.Second):
		t.kill()
	}
}

func (t *torchProc) kill() {
	_ = syscall.Kill(-t.cmd.Process.Pid, syscall.SIGKILL) // workers too
	<-t.done
}

// tailBuffer keeps the last 4 KiB written to it.
type tailBuffer struct {
	mu  sync.Mutex // guards buf
	buf []byte
}

func (b *tailBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.buf = append(b.buf, p...)
	if len(b.buf) > 4096 {
		b.buf = b.buf[len(b.buf)-4096:]
	}
	return len(p), nil
}

func (b *tailBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return strings.TrimSpace(string(b.buf))
}

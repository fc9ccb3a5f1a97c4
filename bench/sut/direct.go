package sut

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
	"syscall"
	"time"

	"github.com/basin-csi/basin/bench/direct"
	"github.com/basin-csi/basin/bench/scenario"
)

// Client is a system without a file system: the runner sends it the cold
// phases' workloads (bench/direct) instead of reading a directory, and
// reports the phases it has no workload for as n/a.
type Client interface {
	System
	// Do runs one workload; ctx's deadline is the phase's.
	Do(ctx context.Context, req direct.Request) (scenario.Measure, error)
}

// Direct is the direct client (bench/direct) over the S3 bucket, in a
// child process (`basin-bench direct-client`) so that its CPU time is its
// own. Mount starts the process, Unmount stops it; it has no cache.
type Direct struct {
	// constant
	bin, dir, lg string
	cfg          direct.Config
	env          []string // credentials: never logged

	child
	// guarded by mu, set with cmd
	in  io.WriteCloser
	out *bufio.Reader
}

var _ Client = (*Direct)(nil)

// directUploadConcurrency is the parts of one multipart upload the direct
// client has in flight: as many as rclone's --transfers.
const directUploadConcurrency = 16

// NewDirect returns the direct client; bin is the basin-bench binary.
func NewDirect(env Env, bin string) *Direct {
	dir := filepath.Join(env.WorkDir, "direct")
	return &Direct{
		bin: bin, dir: dir, lg: filepath.Join(dir, "direct.log"),
		cfg: direct.Config{Endpoint: env.S3.Endpoint, Bucket: env.S3.Bucket, Region: env.S3.Region,
			UploadConcurrency: directUploadConcurrency},
		env: []string{"AWS_ACCESS_KEY_ID=" + env.S3.AccessKey, "AWS_SECRET_ACCESS_KEY=" + env.S3.SecretKey},
	}
}

// Name implements System.
func (d *Direct) Name() string { return "direct" }

// Backend implements System.
func (d *Direct) Backend() Backend { return BackendS3 }

// Check implements System.
func (d *Direct) Check(context.Context) error {
	if FindBinary(d.bin, "") == "" {
		return fmt.Errorf("%w: %s not found (go build ./bench/cmd/basin-bench)", ErrUnavailable, d.bin)
	}
	return nil
}

// Describe implements System.
func (d *Direct) Describe() string {
	return d.bin + " " + direct.Command + " " + strings.Join(d.cfg.Args(), " ") +
		"\n  # keys in AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY; no file system: GETs, parallel ranged GETs " +
		"(the checkpoint: best of several widths) and PUTs (multipart above 8 MiB) from the objstore adapter"
}

// Mount implements System: it starts the client process and returns its
// private directory, which holds nothing but its log.
func (d *Direct) Mount(context.Context) (string, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.cmd != nil {
		return "", errors.New("sut: direct is already started")
	}
	if err := os.MkdirAll(d.dir, 0o700); err != nil {
		return "", err
	}
	logf, err := os.OpenFile(d.lg, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return "", err
	}
	defer func() { _ = logf.Close() }() // the child has its own copy
	cmd := exec.Command(d.bin, append([]string{direct.Command}, d.cfg.Args()...)...)
	cmd.Env = append(os.Environ(), d.env...)
	cmd.Stderr = logf
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	in, err := cmd.StdinPipe()
	if err != nil {
		return "", err
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		return "", err
	}
	if err := cmd.Start(); err != nil {
		return "", fmt.Errorf("sut: start direct client: %w", err)
	}
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); close(done) }()
	d.cmd, d.in, d.out, d.done = cmd, in, bufio.NewReader(out), done
	return d.dir, nil
}

// Do implements Client.
func (d *Direct) Do(ctx context.Context, req direct.Request) (scenario.Measure, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.cmd == nil {
		return scenario.Measure{}, errors.New("sut: direct client not started")
	}
	req.Deadline, _ = ctx.Deadline()
	line, err := json.Marshal(req)
	if err != nil {
		return scenario.Measure{}, err
	}
	if _, err := d.in.Write(append(line, '\n')); err != nil {
		return scenario.Measure{}, fmt.Errorf("sut: direct client: %w; log: %s", err, tail(d.lg, 1500))
	}
	type reply struct {
		a   direct.Answer
		err error
	}
	got := make(chan reply, 1)
	go func() {
		var r reply
		b, err := d.out.ReadBytes('\n')
		if err == nil {
			err = json.Unmarshal(b, &r.a)
		}
		r.err = err
		got <- r
	}()
	var r reply
	select {
	case r = <-got:
	case <-ctx.Done():
		// The client stops at the same deadline; a cancelled run, or a
		// client that does not stop, is killed.
		select {
		case r = <-got:
		case <-time.After(30 * time.Second):
			_ = syscall.Kill(-d.cmd.Process.Pid, syscall.SIGKILL)
			r = <-got
		}
	}
	d.samplePeakLocked()
	switch {
	case r.err != nil:
		return r.a.Measure, fmt.Errorf("sut: direct client: %w; log: %s", r.err, tail(d.lg, 1500))
	case r.a.Err != "":
		return r.a.Measure, errors.New(r.a.Err)
	}
	return r.a.Measure, nil
}

// Unmount implements System: it ends the client's input and waits for it
// to exit.
func (d *Direct) Unmount(context.Context) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.cmd == nil {
		return nil
	}
	d.samplePeakLocked()
	_ = d.in.Close()
	select {
	case <-d.done:
	case <-time.After(defaultUnmountTimeout):
		_ = syscall.Kill(-d.cmd.Process.Pid, syscall.SIGKILL)
		<-d.done
	}
	ok := d.cmd.ProcessState != nil && d.cmd.ProcessState.Success()
	d.cmd = nil
	if !ok {
		return fmt.Errorf("sut: direct client failed; log: %s", tail(d.lg, 1500))
	}
	return nil
}

// DropCache implements System: the client has no cache.
func (d *Direct) DropCache() error { return nil }

package servers

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"syscall"
	"time"
)

// ErrNotReady means a server did not answer its readiness URL in time.
var ErrNotReady = errors.New("servers: server not ready")

// MinIO's fixed root credentials and region: the servers are private to
// one benchmark run on 127.0.0.1.
const (
	MinIOAccessKey = "basinbench"
	MinIOSecretKey = "basin-bench-secret-1234"
	MinIORegion    = "us-east-1"
)

// Server is one running server.
type Server struct {
	// Endpoint is the base URL, e.g. http://127.0.0.1:34567.
	Endpoint string

	// constant
	cmd  *exec.Cmd
	done chan struct{}
	out  *syncBuffer
}

// StartMinIO runs bin as a single-drive MinIO server with data in dir.
func StartMinIO(ctx context.Context, bin, dir string) (*Server, error) {
	port, err := FreePort()
	if err != nil {
		return nil, err
	}
	console, err := FreePort()
	if err != nil {
		return nil, err
	}
	addr := "127.0.0.1:" + strconv.Itoa(port)
	args := []string{"server", filepath.Join(dir, "data"), "--quiet",
		"--address", addr, "--console-address", "127.0.0.1:" + strconv.Itoa(console)}
	env := []string{"MINIO_ROOT_USER=" + MinIOAccessKey, "MINIO_ROOT_PASSWORD=" + MinIOSecretKey,
		"MINIO_BROWSER=off", "MINIO_REGION=" + MinIORegion, "MINIO_UPDATE=off"}
	return start(ctx, bin, args, env, "http://"+addr, "/minio/health/live")
}

// StartGCS runs bin as fake-gcs-server on port with its filesystem backend
// in dir. externalURL is the address clients use (the WAN proxy in front
// of it), which the server writes into resumable-upload locations.
func StartGCS(ctx context.Context, bin, dir string, port int, externalURL string) (*Server, error) {
	root := filepath.Join(dir, "root")
	if err := os.MkdirAll(root, 0o700); err != nil {
		return nil, err
	}
	p := strconv.Itoa(port)
	u := "http://127.0.0.1:" + p
	if externalURL == "" {
		externalURL = u
	}
	args := []string{"-scheme", "http", "-host", "127.0.0.1", "-port", p,
		"-backend", "filesystem", "-filesystem-root", root,
		"-public-host", "127.0.0.1:" + p, "-external-url", externalURL, "-log-level", "error"}
	return start(ctx, bin, args, nil, u, "/storage/v1/b")
}

func start(ctx context.Context, bin string, args, env []string, endpoint, ready string) (*Server, error) {
	s := &Server{Endpoint: endpoint, done: make(chan struct{}), out: &syncBuffer{}}
	s.cmd = exec.Command(bin, args...)
	s.cmd.Env = append(os.Environ(), env...)
	s.cmd.Stdout, s.cmd.Stderr = s.out, s.out
	s.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := s.cmd.Start(); err != nil {
		return nil, fmt.Errorf("servers: start %s: %w", bin, err)
	}
	go func() { _ = s.cmd.Wait(); close(s.done) }()

	ctx, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	client := &http.Client{Timeout: 2 * time.Second, Transport: &http.Transport{Proxy: nil}}
	for {
		select {
		case <-s.done:
			return nil, fmt.Errorf("%w: %s exited: %s", ErrNotReady, bin, s.out.String())
		case <-ctx.Done():
			s.Stop()
			return nil, fmt.Errorf("%w: %s after 60s: %s", ErrNotReady, bin, s.out.String())
		case <-time.After(100 * time.Millisecond):
		}
		if resp, err := client.Get(endpoint + ready); err == nil {
			_ = resp.Body.Close()
			if resp.StatusCode < 500 {
				return s, nil
			}
		}
	}
}

// PID is the server's process ID.
func (s *Server) PID() int { return s.cmd.Process.Pid }

// Stop terminates the server's process group and waits for it.
func (s *Server) Stop() {
	_ = syscall.Kill(-s.cmd.Process.Pid, syscall.SIGTERM)
	select {
	case <-s.done:
	case <-time.After(10 * time.Second):
		_ = syscall.Kill(-s.cmd.Process.Pid, syscall.SIGKILL)
		<-s.done
	}
}

// FreePort asks the kernel for an unused 127.0.0.1 port.
func FreePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer func() { _ = l.Close() }()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// syncBuffer keeps the first MiB of a child's output for error messages.
type syncBuffer struct {
	mu  sync.Mutex // guards buf
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.buf.Len() < 1<<20 {
		b.buf.Write(p)
	}
	return len(p), nil
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// Kill kills the server's process group at once (SIGKILL), as a crash
// would, and waits for it. Stop after Kill does nothing more.
func (s *Server) Kill() {
	_ = syscall.Kill(-s.cmd.Process.Pid, syscall.SIGKILL)
	<-s.done
}

// PurgeMinIOTrash removes what a MinIO server with data in dir keeps of
// deleted objects until it gets round to purging them itself:
// .minio.sys/tmp/.trash, and .minio.sys/tmp-old, where a start moves the
// previous server's temporary files. A bench pass writes and deletes
// gigabytes, and MinIO purged them slower than the next pass needed the
// room (its disk check then refused the system). Safe while the server
// runs: nothing it serves lives there.
func PurgeMinIOTrash(dir string) error {
	sys := filepath.Join(dir, "data", ".minio.sys")
	errs := []error{os.RemoveAll(filepath.Join(sys, "tmp-old"))}
	trash := filepath.Join(sys, "tmp", ".trash")
	entries, err := os.ReadDir(trash)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		errs = append(errs, err)
	}
	for _, e := range entries {
		errs = append(errs, os.RemoveAll(filepath.Join(trash, e.Name())))
	}
	return errors.Join(errs...)
}

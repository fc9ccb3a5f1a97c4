package testserver

import (
	"net"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"testing"
)

// InstallHint tells how to get the pinned servers and tools the tests
// use: the script `make test` and CI run first.
const InstallHint = "hack/install-tools.sh (make tools)"

// Server is one running object-store server.
type Server struct {
	// Endpoint is the base URL, e.g. http://127.0.0.1:34567.
	Endpoint string
	// AccessKey and SecretKey are MinIO's root credentials (empty for GCS).
	AccessKey, SecretKey string
	// Region is the region MinIO accepts.
	Region string

	// constant
	kind    string
	bin     string
	dataDir string
	host    string // the address it listens on
	port    int

	mu   sync.Mutex // guards proc
	proc *process
}

// shared servers, one per kind and test binary.
var (
	sharedMu sync.Mutex
	shared   = map[string]*Server{}
)

// MinIO returns the test binary's shared MinIO server, starting it on first
// use. Tests must not stop it; use NewMinIO for a server a test may stop.
func MinIO(t testing.TB) *Server { return sharedServer(t, "minio") }

// GCS returns the test binary's shared fake-gcs-server.
func GCS(t testing.TB) *Server { return sharedServer(t, "gcs") }

// NewMinIO starts a MinIO server owned by the test (stopped at cleanup).
func NewMinIO(t testing.TB) *Server { return ownedServer(t, "minio", loopback) }

// NewMinIOOn is NewMinIO listening on host instead of 127.0.0.1: an
// address of the network namespace the test runs in, for clients in other
// namespaces (the cluster test's pods).
func NewMinIOOn(t testing.TB, host string) *Server { return ownedServer(t, "minio", host) }

// NewGCS starts a fake-gcs-server owned by the test (stopped at cleanup).
func NewGCS(t testing.TB) *Server { return ownedServer(t, "gcs", loopback) }

// loopback is where servers listen unless told otherwise.
const loopback = "127.0.0.1"

// Shutdown stops the shared servers and removes the csi-driver CSIDriver
// built; call it from TestMain after m.Run.
func Shutdown() {
	removeBuilt()
	sharedMu.Lock()
	defer sharedMu.Unlock()
	for k, s := range shared {
		s.Stop()
		_ = os.RemoveAll(s.dataDir)
		delete(shared, k)
	}
}

func sharedServer(t testing.TB, kind string) *Server {
	t.Helper()
	sharedMu.Lock()
	defer sharedMu.Unlock()
	if s, ok := shared[kind]; ok {
		return s
	}
	dir, err := os.MkdirTemp("", "basin-"+kind+"-")
	if err != nil {
		t.Fatal(err)
	}
	s, err := start(t, kind, dir, loopback)
	if err != nil {
		_ = os.RemoveAll(dir)
		Unavailable(t, "%v", err)
	}
	shared[kind] = s
	return s
}

func ownedServer(t testing.TB, kind, host string) *Server {
	t.Helper()
	s, err := start(t, kind, t.TempDir(), host)
	if err != nil {
		Unavailable(t, "%v", err)
	}
	t.Cleanup(s.Stop)
	return s
}

func start(t testing.TB, kind, dir, host string) (*Server, error) {
	t.Helper()
	s := &Server{kind: kind, dataDir: dir, host: host}
	switch kind {
	case "minio":
		s.bin = RequireBinary(t, "minio", InstallHint)
		s.AccessKey, s.SecretKey, s.Region = "basinadmin", "basin-secret-key-1234", "us-east-1"
	case "gcs":
		s.bin = RequireBinary(t, "fake-gcs-server", InstallHint)
	}
	port, err := freePort(host)
	if err != nil {
		return nil, err
	}
	s.port = port
	s.Endpoint = "http://" + s.HostPort()
	return s, s.Start()
}

// Start (re)starts a stopped server on the same port and data directory, so
// tests can simulate an outage with Stop and a recovery with Start. MinIO
// keeps its objects across the restart; fake-gcs-server (memory backend)
// does not.
func (s *Server) Start() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.proc != nil {
		return nil
	}
	port := strconv.Itoa(s.port)
	var (
		args, env []string
		ready     string
	)
	switch s.kind {
	case "minio":
		console, err := freePort(s.host)
		if err != nil {
			return err
		}
		args = []string{"server", filepath.Join(s.dataDir, "data"), "--quiet",
			"--address", s.HostPort(), "--console-address", net.JoinHostPort(s.host, strconv.Itoa(console))}
		env = []string{"MINIO_ROOT_USER=" + s.AccessKey, "MINIO_ROOT_PASSWORD=" + s.SecretKey,
			"MINIO_BROWSER=off", "MINIO_REGION=" + s.Region, "MINIO_UPDATE=off"}
		ready = s.Endpoint + "/minio/health/live"
	case "gcs":
		// The memory backend: the filesystem one drops directory markers
		// ("dir/") and cannot hold "a" next to "a/b", both of which real GCS
		// stores. Its cost: Stop + Start loses the objects.
		args = []string{"-scheme", "http", "-host", s.host, "-port", port,
			"-backend", "memory",
			"-public-host", s.HostPort(), "-external-url", s.Endpoint, "-log-level", "error"}
		ready = s.Endpoint + "/storage/v1/b"
	}
	p, err := startProcess(s.bin, args, env, ready)
	if err != nil {
		return err
	}
	s.proc = p
	return nil
}

// Stop stops the server; its data stays for a later Start.
func (s *Server) Stop() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.proc.stop()
	s.proc = nil
}

// HostPort is the endpoint without scheme (for STORAGE_EMULATOR_HOST).
func (s *Server) HostPort() string { return net.JoinHostPort(s.host, strconv.Itoa(s.port)) }

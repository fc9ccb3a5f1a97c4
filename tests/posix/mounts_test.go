package posix

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/basin-csi/basin/internal/testserver"
	"github.com/basin-csi/basin/pkg/objstore"
	"github.com/basin-csi/basin/pkg/objstore/s3store"
)

// bucket is a fresh bucket of the shared MinIO.
type bucket struct {
	srv  *testserver.Server
	name string
}

func newBucket(t *testing.T) bucket {
	t.Helper()
	testserver.RequireFUSE(t)
	srv := testserver.MinIO(t)
	var rnd [6]byte
	_, _ = rand.Read(rnd[:])
	b := bucket{srv: srv, name: "basin-posix-" + hex.EncodeToString(rnd[:])}
	admin, err := s3store.NewAdmin(t.Context(), objstore.Config{
		Backend: objstore.BackendS3, Endpoint: srv.Endpoint, Region: srv.Region, PathStyle: true,
	}, objstore.Credentials{AccessKeyID: srv.AccessKey, SecretAccessKey: srv.SecretKey})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = admin.Close() }()
	if err := admin.CreateBucket(t.Context(), b.name); err != nil {
		t.Fatal(err)
	}
	return b
}

// mountBasin mounts prefix of b with `csi-driver mount` and its default
// settings; the credentials go in the environment, never in argv.
func mountBasin(t *testing.T, b bucket, prefix string) string {
	t.Helper()
	bin, err := testserver.CSIDriver()
	if err != nil {
		t.Fatalf("build csi-driver: %v", err)
	}
	dir, cache := t.TempDir(), t.TempDir()
	cmd := exec.Command(bin, "mount", "s3://"+b.name+"/"+prefix, dir,
		"--endpoint", b.srv.Endpoint, "--region", b.srv.Region, "--path-style", "--cache-dir", cache)
	cmd.Env = append(os.Environ(), "AWS_ACCESS_KEY_ID="+b.srv.AccessKey, "AWS_SECRET_ACCESS_KEY="+b.srv.SecretKey)
	startMount(t, "basin", cmd, dir)
	return dir
}

// mountRclone mounts prefix of b with `rclone mount` and its VFS write
// cache (--vfs-cache-mode writes: what rclone recommends for programs that
// open files for reading and writing); the remote is defined in the
// environment.
func mountRclone(t *testing.T, b bucket, prefix string) string {
	t.Helper()
	bin := testserver.RequireBinary(t, "rclone", "make tools (apt: rclone)")
	dir, cache := t.TempDir(), t.TempDir()
	conf := filepath.Join(t.TempDir(), "rclone.conf")
	if err := os.WriteFile(conf, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "mount", "basinposix:"+b.name+"/"+strings.TrimSuffix(prefix, "/"), dir,
		"--config", conf, "--cache-dir", cache, "--vfs-cache-mode", "writes")
	// rclone's S3 client refuses a custom CA bundle on its own transport
	// (LoadCustomCABundleError); MinIO here is plain HTTP.
	cmd.Env = append(slices.DeleteFunc(os.Environ(), func(kv string) bool { return strings.HasPrefix(kv, "AWS_CA_BUNDLE=") }),
		"RCLONE_CONFIG_BASINPOSIX_TYPE=s3", "RCLONE_CONFIG_BASINPOSIX_PROVIDER=Minio",
		"RCLONE_CONFIG_BASINPOSIX_ENDPOINT="+b.srv.Endpoint, "RCLONE_CONFIG_BASINPOSIX_REGION="+b.srv.Region,
		"RCLONE_CONFIG_BASINPOSIX_ACCESS_KEY_ID="+b.srv.AccessKey,
		"RCLONE_CONFIG_BASINPOSIX_SECRET_ACCESS_KEY="+b.srv.SecretKey)
	startMount(t, "rclone", cmd, dir)
	return dir
}

// startMount starts a FUSE server process that mounts dir and waits until
// dir is a mount; at cleanup it unmounts and stops the process.
func startMount(t *testing.T, what string, cmd *exec.Cmd, dir string) {
	t.Helper()
	log := &syncBuffer{}
	cmd.Stdout, cmd.Stderr = log, log
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatalf("start %s: %v", what, err)
	}
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); close(exited) }()
	t.Cleanup(func() {
		_ = syscall.Unmount(dir, 0)
		_ = cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-exited:
		case <-time.After(15 * time.Second):
			_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
			_ = syscall.Unmount(dir, syscall.MNT_DETACH)
			<-exited
		}
	})
	ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
	defer cancel()
	for !mounted(dir) {
		select {
		case <-exited:
			t.Fatalf("%s exited before mounting %s:\n%s", what, dir, log)
		case <-ctx.Done():
			t.Fatalf("%s did not mount %s in time:\n%s", what, dir, log)
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// syncBuffer is a process's output, read while it is written.
type syncBuffer struct {
	mu sync.Mutex
	b  strings.Builder // guarded by mu
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// mounted reports whether dir is a mount point (its own line in
// /proc/self/mountinfo).
func mounted(dir string) bool {
	b, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		return false
	}
	for _, l := range strings.Split(string(b), "\n") {
		if f := strings.Fields(l); len(f) > 4 && f[4] == dir {
			return true
		}
	}
	return false
}

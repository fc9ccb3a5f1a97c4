package main

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/basin-csi/basin/internal/testserver"
	"github.com/basin-csi/basin/pkg/mountspec"
	"github.com/basin-csi/basin/pkg/objstore"
	"github.com/basin-csi/basin/pkg/objstore/s3store"
)

func TestMain(m *testing.M) {
	code := m.Run()
	testserver.Shutdown()
	os.Exit(code)
}

// isMounted reports whether dir is a mount point (per /proc/self/mountinfo).
func isMounted(t *testing.T, dir string) bool {
	t.Helper()
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = f.Close() }()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if fields := strings.Fields(sc.Text()); len(fields) > 4 && fields[4] == dir {
			return true
		}
	}
	return false
}

// waitFor polls cond for up to 30 s.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if cond() {
			return
		}
	}
	t.Fatalf("timed out waiting for %s", what)
}

// startMount runs `csi-driver mount args...` in-process until the returned
// stop is called; cleanup stops it and lazily detaches a leftover mount.
func startMount(t *testing.T, mnt string, args ...string) (stop func() error) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	var stderr bytes.Buffer
	go func() { done <- runMount(ctx, args, io.Discard, &stderr) }()
	stopped := false
	var result error
	stop = func() error {
		if !stopped {
			stopped = true
			cancel()
			select {
			case result = <-done:
			case <-time.After(30 * time.Second):
				result = fmt.Errorf("mount command did not return after cancel")
			}
		}
		return result
	}
	t.Cleanup(func() {
		_ = stop()
		if mnt != "" && isMounted(t, mnt) {
			t.Errorf("%s still mounted at cleanup", mnt)
			_ = syscall.Unmount(mnt, syscall.MNT_DETACH)
		}
	})
	if mnt != "" {
		waitFor(t, "the mount", func() bool {
			select {
			case err := <-done:
				t.Fatalf("mount command returned early: %v\n%s", err, stderr.String())
			default:
			}
			return isMounted(t, mnt)
		})
		// Mounted is not served yet: wait for an answer from the server.
		waitFor(t, "the server", func() bool { _, err := os.Stat(mnt); return err == nil })
		answerPollOnce(t, mnt)
	}
	return stop
}

// answerPollOnce makes the kernel ask the mount's server for poll(2)
// support once, outside the Go runtime's poller. The runtime adds every
// file it opens to its epoll set, and epoll_ctl on a FUSE file sends a
// POLL request; this test process serves the mount, and the thread in
// epoll_ctl keeps its P meanwhile, so with GOMAXPROCS=1 (or during a
// stop-the-world) nobody answers and the test hangs. go-fuse answers
// ENOSYS for its poll-hack file, after which the kernel asks no more; its
// own ask (WaitMount) may still be pending when the mount already answers.
func answerPollOnce(t *testing.T, mnt string) {
	t.Helper()
	fd, err := syscall.Open(filepath.Join(mnt, ".go-fuse-epoll-hack"), syscall.O_RDONLY, 0)
	if err != nil {
		t.Fatalf("open the poll-hack file: %v", err)
	}
	defer func() { _ = syscall.Close(fd) }()
	_, _ = unix.Poll([]unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}, 0) // ENOSYS from the server, or ready
}

func TestMountCommandFile(t *testing.T) {
	testserver.RequireFUSE(t)
	bucket, mnt := t.TempDir(), t.TempDir()
	if err := os.MkdirAll(filepath.Join(bucket, "sub"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(bucket, "sub", "a.txt"), []byte("hello"), 0o644); err != nil {
		t.Fatal(err)
	}
	stop := startMount(t, mnt, "--cache-dir", t.TempDir(), "--metadata-ttl", "0", "file://"+bucket, mnt)

	got, err := os.ReadFile(filepath.Join(mnt, "sub", "a.txt"))
	if err != nil || string(got) != "hello" {
		t.Fatalf("read through the mount: %q, %v", got, err)
	}
	if err := os.WriteFile(filepath.Join(mnt, "sub", "b.txt"), []byte("written"), 0o644); err != nil {
		t.Fatalf("write: %v", err)
	}
	if got, err := os.ReadFile(filepath.Join(bucket, "sub", "b.txt")); err != nil || string(got) != "written" {
		t.Errorf("bucket after write: %q, %v", got, err)
	}
	var st syscall.Statfs_t
	if err := syscall.Statfs(mnt, &st); err != nil || uint64(st.Blocks)*uint64(st.Bsize) != 10<<30 {
		t.Errorf("statfs: %d blocks of %d, %v; want the 10Gi cache size", st.Blocks, st.Bsize, err)
	}
	if err := stop(); err != nil {
		t.Errorf("stop: %v", err)
	}
	if isMounted(t, mnt) {
		t.Error("still mounted after the command returned")
	}
}

func TestMountCommandReadOnly(t *testing.T) {
	for _, mode := range []string{"server", "kernel"} {
		t.Run(mode, func(t *testing.T) {
			testserver.RequireFUSE(t)
			bucket, mnt := t.TempDir(), t.TempDir()
			if err := os.WriteFile(filepath.Join(bucket, "f"), []byte("content"), 0o644); err != nil {
				t.Fatal(err)
			}
			startMount(t, mnt, "--cache-dir", t.TempDir(), "--read-only", "--open-mode", mode, "file://"+bucket, mnt)
			err := os.WriteFile(filepath.Join(mnt, "x"), nil, 0o644)
			if errno, _ := err.(*os.PathError); errno == nil || errno.Err != syscall.EROFS {
				t.Errorf("write on a read-only mount: %v, want EROFS", err)
			}
			for range 2 {
				if got, err := os.ReadFile(filepath.Join(mnt, "f")); err != nil || string(got) != "content" {
					t.Errorf("read %q, %v", got, err)
				}
			}
		})
	}
}

// mountFD mounts /dev/fuse on mnt the way the node plugin does and returns
// the descriptor; cleanup detaches the mount.
func mountFD(t *testing.T, mnt string) int {
	t.Helper()
	fd, err := syscall.Open("/dev/fuse", syscall.O_RDWR|syscall.O_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	opts := fmt.Sprintf("fd=%d,rootmode=40000,user_id=0,group_id=0,allow_other,default_permissions,max_read=1048576", fd)
	if err := syscall.Mount("basin-test", mnt, "fuse.basin", syscall.MS_NOSUID|syscall.MS_NODEV, opts); err != nil {
		_ = syscall.Close(fd)
		t.Fatalf("mount(2): %v", err)
	}
	t.Cleanup(func() { _ = syscall.Unmount(mnt, syscall.MNT_DETACH) })
	return fd
}

// catFD reads path on an fd-mode mount served by this process, from a
// child process: in fd mode go-fuse cannot run its poll hack (it has no
// path), and a Go program that opens files on a mount it serves itself
// can deadlock in epoll_ctl on the kernel's POLL.
func catFD(t *testing.T, path string) []byte {
	t.Helper()
	var got []byte
	waitFor(t, "reads through the fd", func() bool {
		var err error
		got, err = exec.Command("cat", path).Output()
		return err == nil
	})
	return got
}

// TestMountCommandFD serves a /dev/fuse descriptor this process mounted
// itself, the way the node plugin hands one to the FUSE process.
func TestMountCommandFD(t *testing.T) {
	testserver.RequireFUSE(t)
	bucket, mnt := t.TempDir(), t.TempDir()
	if err := os.WriteFile(filepath.Join(bucket, "f"), []byte("via fd"), 0o644); err != nil {
		t.Fatal(err)
	}
	fd := mountFD(t, mnt)
	stop := startMount(t, "", "--fd", fmt.Sprint(fd), "--cache-dir", t.TempDir(), "file://"+bucket)

	got := catFD(t, filepath.Join(mnt, "f"))
	if string(got) != "via fd" {
		t.Errorf("read = %q", got)
	}
	// The plugin owns the mount: stopping the command leaves it mounted.
	if err := stop(); err != nil {
		t.Errorf("stop: %v", err)
	}
	if !isMounted(t, mnt) {
		t.Error("fd mode unmounted the caller's mount")
	}
	if err := syscall.Unmount(mnt, 0); err != nil {
		t.Errorf("unmount by the owner: %v", err)
	}
}

// newS3Bucket creates bucket on srv and returns a client of it (closed at
// the test's end) and the server's credentials.
func newS3Bucket(t *testing.T, srv *testserver.Server, bucket string) (objstore.Store, objstore.Credentials) {
	t.Helper()
	cfg := objstore.Config{Backend: objstore.BackendS3, Endpoint: srv.Endpoint, Region: srv.Region, PathStyle: true}
	creds := objstore.Credentials{AccessKeyID: srv.AccessKey, SecretAccessKey: srv.SecretKey}
	admin, err := s3store.NewAdmin(t.Context(), cfg, creds)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = admin.Close() }()
	if err := admin.CreateBucket(t.Context(), bucket); err != nil {
		t.Fatal(err)
	}
	cfg.Bucket = bucket
	store, err := s3store.New(t.Context(), cfg, creds)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = store.Close() })
	return store, creds
}

func TestMountCommandMinIO(t *testing.T) {
	testserver.RequireFUSE(t)
	srv := testserver.MinIO(t)
	bucket := fmt.Sprintf("basin-cmd-%d", time.Now().UnixNano())
	store, creds := newS3Bucket(t, srv, bucket)
	if _, err := store.Put(t.Context(), "vol/data/x", strings.NewReader("in minio"), objstore.PutOptions{Size: 8}); err != nil {
		t.Fatal(err)
	}
	check := func(t *testing.T, extra ...string) {
		mnt := t.TempDir()
		args := append([]string{"--endpoint", srv.Endpoint, "--region", srv.Region, "--path-style",
			"--cache-dir", t.TempDir()}, extra...)
		startMount(t, mnt, append(args, "s3://"+bucket+"/vol", mnt)...)
		got, err := os.ReadFile(filepath.Join(mnt, "data", "x"))
		if err != nil || string(got) != "in minio" {
			t.Fatalf("read: %q, %v", got, err)
		}
		if err := os.WriteFile(filepath.Join(mnt, "data", "y"), []byte("up"), 0o644); err != nil {
			t.Fatal(err)
		}
		if _, err := store.Stat(t.Context(), "vol/data/y"); err != nil {
			t.Errorf("written file not under the prefix in the bucket: %v", err)
		}
	}
	t.Run("environment", func(t *testing.T) {
		t.Setenv("AWS_ACCESS_KEY_ID", srv.AccessKey)
		t.Setenv("AWS_SECRET_ACCESS_KEY", srv.SecretKey)
		check(t)
	})
	t.Run("hand-off file", func(t *testing.T) {
		// The node plugin's way: the spec and the credentials in a 0600
		// file, the mount made by the caller, nothing in argv.
		t.Setenv("AWS_ACCESS_KEY_ID", "")
		t.Setenv("AWS_SECRET_ACCESS_KEY", "")
		spec := mountspec.Default()
		spec.Bucket, spec.Prefix, spec.Endpoint, spec.Region, spec.PathStyle = bucket, "vol/", srv.Endpoint, srv.Region, true
		path, err := mountspec.WriteHandoffFile(filepath.Join(t.TempDir(), "handoff"), mountspec.Handoff{Spec: spec, Credentials: creds})
		if err != nil {
			t.Fatal(err)
		}
		mnt := t.TempDir()
		fd := mountFD(t, mnt)
		startMount(t, "", "--fd", fmt.Sprint(fd), "--cache-dir", t.TempDir(), "--spec-file", path)
		if got := catFD(t, filepath.Join(mnt, "data", "x")); string(got) != "in minio" {
			t.Fatalf("read: %q", got)
		}
		if _, err := os.Stat(path); !os.IsNotExist(err) {
			t.Errorf("hand-off file left behind: %v", err)
		}
	})
}

// startMountProcess runs `bin mount args...` as a child process (env
// added to the test's) until the mount at mnt is up; cleanup kills it and
// lazily detaches a leftover mount. stderr collects the child's log.
func startMountProcess(t *testing.T, bin, mnt string, env []string, args ...string) (cmd *exec.Cmd, stderr *bytes.Buffer) {
	t.Helper()
	cmd = exec.Command(bin, append([]string{"mount"}, args...)...)
	cmd.Env = append(os.Environ(), env...)
	stderr = &bytes.Buffer{}
	cmd.Stderr = stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait() // reaps it unless the test did
		if isMounted(t, mnt) {
			_ = syscall.Unmount(mnt, syscall.MNT_DETACH)
		}
	})
	waitFor(t, "the mount", func() bool { return isMounted(t, mnt) })
	return cmd, stderr
}

// mountBinary builds csi-driver for a test that runs its mount command:
// one that needs /dev/fuse (fails under CI=true without it) and is
// skipped by -short.
func mountBinary(t *testing.T) string {
	t.Helper()
	testserver.RequireFUSE(t)
	testserver.SkipShort(t, "builds the binary")
	bin, err := testserver.CSIDriver()
	if err != nil {
		t.Fatalf("build csi-driver: %v", err)
	}
	return bin
}

// TestMountCommandSIGTERM runs the real binary and checks that SIGTERM
// unmounts cleanly and exits 0.
func TestMountCommandSIGTERM(t *testing.T) {
	bin := mountBinary(t)
	bucket, mnt := t.TempDir(), t.TempDir()
	if err := os.WriteFile(filepath.Join(bucket, "f"), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd, stderr := startMountProcess(t, bin, mnt, nil, "--cache-dir", t.TempDir(), "file://"+bucket, mnt)
	if got, err := os.ReadFile(filepath.Join(mnt, "f")); err != nil || string(got) != "x" {
		t.Fatalf("read: %q, %v", got, err)
	}
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	select {
	case err := <-exited:
		if err != nil {
			t.Errorf("exit after SIGTERM: %v\n%s", err, stderr.String())
		}
	case <-time.After(30 * time.Second):
		t.Fatalf("no exit 30 s after SIGTERM\n%s", stderr.String())
	}
	if isMounted(t, mnt) {
		t.Error("still mounted after SIGTERM")
	}
}

// TestMountCommandMountOptions: --mount-options (the mountOptions
// attribute's list) become flags of the kernel mount.
func TestMountCommandMountOptions(t *testing.T) {
	testserver.RequireFUSE(t)
	bucket, mnt := t.TempDir(), t.TempDir()
	startMount(t, mnt, "--cache-dir", t.TempDir(), "--mount-options", "noexec,noatime", "file://"+bucket, mnt)
	b, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		t.Fatal(err)
	}
	var opts string
	for line := range strings.SplitSeq(string(b), "\n") {
		if f := strings.Fields(line); len(f) > 5 && f[4] == mnt {
			opts = f[5]
		}
	}
	for _, want := range []string{"noexec", "noatime", "nosuid", "nodev"} {
		if !slices.Contains(strings.Split(opts, ","), want) {
			t.Errorf("mount options %q lack %s", opts, want)
		}
	}
}

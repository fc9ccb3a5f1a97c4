package sut

import (
	"bufio"
	"context"
	"errors"
	"os"
	"path/filepath"
	"runtime/debug"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/basin-csi/basin/internal/testserver"
)

func TestParseMountinfo(t *testing.T) {
	info := `21 26 0:20 / /proc rw,relatime - proc proc rw
36 35 98:0 /mnt1 /work/a\040b rw,noatime master:1 - ext4 /dev/root rw
90 26 0:55 / /work/mnt rw,nosuid,nodev - fuse.rclone bench: rw,user_id=0
91 90 0:56 / /work/mnt rw - fuse.s3fs s3fs rw
`
	tests := []struct{ dir, want string }{
		{"/work/a b", "ext4"},
		{"/work/mnt", "fuse.s3fs"}, // the later mount hides the earlier one
		{"/proc", "proc"},
		{"/nowhere", ""},
	}
	for _, tc := range tests {
		t.Run(tc.dir, func(t *testing.T) {
			got, err := parseMountinfo(bufio.NewScanner(strings.NewReader(info)), tc.dir)
			if err != nil || got != tc.want {
				t.Fatalf("= %q, %v; want %q", got, err, tc.want)
			}
		})
	}
}

func TestParseVmHWM(t *testing.T) {
	got, err := parseVmHWM("Name:\trclone\nVmPeak:\t 100 kB\nVmHWM:\t   2048 kB\nVmRSS:\t 1024 kB\n")
	if err != nil || got != 2048<<10 {
		t.Fatalf("= %d, %v", got, err)
	}
	if _, err := parseVmHWM("Name:\tx\n"); err == nil {
		t.Fatal("missing VmHWM accepted")
	}
	if v, err := PeakRSSOf(os.Getpid()); err != nil || v <= 0 {
		t.Fatalf("own peak RSS = %d, %v", v, err)
	}
}

// TestResetPeakRSS: a 64 MiB peak, given back to the system, is gone from
// VmHWM after the reset.
func TestResetPeakRSS(t *testing.T) {
	pid := os.Getpid()
	touch64MiB()
	before, err := PeakRSSOf(pid)
	if err != nil {
		t.Fatal(err)
	}
	debug.FreeOSMemory()
	if err := ResetPeakRSS(pid); err != nil {
		t.Fatal(err)
	}
	after, err := PeakRSSOf(pid)
	if err != nil || after > before-32<<20 {
		t.Fatalf("peak RSS %d MiB with 64 MiB touched, %d MiB (%v) after it was freed and the peak reset", before>>20, after>>20, err)
	}
}

//go:noinline
func touch64MiB() {
	b := make([]byte, 64<<20)
	for i := range b {
		b[i] = 1
	}
}

func TestChildEnv(t *testing.T) {
	got := childEnv([]string{"A=1", "AWS_CA_BUNDLE=/x", "B=2"}, []string{"C=3"}, []string{"AWS_CA_BUNDLE"})
	if want := []string{"A=1", "B=2", "C=3"}; !slices.Equal(got, want) {
		t.Fatalf("= %v, want %v", got, want)
	}
}

// TestNoSecretsInArgv checks every peer's command line, which goes into
// logs and the report.
func TestNoSecretsInArgv(t *testing.T) {
	env := Env{WorkDir: t.TempDir(), LocalRoot: t.TempDir(),
		S3:  S3Target{Endpoint: "http://127.0.0.1:1", Bucket: "b", Region: "us-east-1", AccessKey: "AKIDSECRET", SecretKey: "VERYSECRET"},
		GCS: GCSTarget{Endpoint: "http://127.0.0.1:2", Bucket: func() string { return "b" }}}
	for _, s := range []System{NewRclone(env), NewS3fs(env), NewGCSFuse(env), NewBasin(env, "/bin/true"), NewLocal(env)} {
		t.Run(s.Name(), func(t *testing.T) {
			d := s.Describe()
			if strings.Contains(d, "AKIDSECRET") || strings.Contains(d, "VERYSECRET") {
				t.Fatalf("secret in %q", d)
			}
			if s.Name() != "local" && !strings.Contains(d, "127.0.0.1") {
				t.Errorf("endpoint missing from %q", d)
			}
		})
	}
}

func TestBasinExtraFlagsComeBeforeTheSource(t *testing.T) {
	env := Env{WorkDir: t.TempDir(), S3: S3Target{Endpoint: "http://127.0.0.1:1", Bucket: "b"}}
	d := NewBasin(env, "/bin/true", "--metadata-ttl=1m").Describe()
	def, extra, src := strings.Index(d, "--metadata-ttl -1"), strings.Index(d, "--metadata-ttl=1m"), strings.Index(d, "s3://b")
	if def < 0 || extra < def || src < extra {
		t.Fatalf("want the default, then the extra flag, then the source: %q", d)
	}
}

func TestUnavailable(t *testing.T) {
	env := Env{WorkDir: t.TempDir(), ToolsBin: t.TempDir()}
	tests := []struct {
		name string
		sys  System
	}{
		{"missing binary", NewBasin(env, filepath.Join(t.TempDir(), "no-such-csi-driver"))},
		{"mount not implemented", NewBasin(env, "/bin/echo")},
		{"server down", Unavailable(NewLocal(Env{LocalRoot: t.TempDir()}), "minio did not start")},
		{"no local root", NewLocal(Env{LocalRoot: "/nonexistent/basin"})},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if err := tc.sys.Check(context.Background()); !errors.Is(err, ErrUnavailable) {
				t.Fatalf("Check = %v, want ErrUnavailable", err)
			}
		})
	}
}

func TestFindBinary(t *testing.T) {
	dir := t.TempDir()
	exe := filepath.Join(dir, "tool")
	if err := os.WriteFile(exe, []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	if got := FindBinary("tool", dir); got != exe {
		t.Errorf("tools dir: %q", got)
	}
	if got := FindBinary(exe, ""); got != exe {
		t.Errorf("path: %q", got)
	}
	if got := FindBinary("sh", ""); got == "" {
		t.Error("sh not found on $PATH")
	}
	if got := FindBinary("no-such-tool-basin", dir); got != "" {
		t.Errorf("found %q", got)
	}
}

func TestMountExitsEarly(t *testing.T) {
	s := newFuseSystem(Env{WorkDir: t.TempDir()}, recipe{name: "false", bin: "false",
		args: func(_, _, _ string) []string { return nil }})
	_, err := s.Mount(context.Background())
	if err == nil || !strings.Contains(err.Error(), "exited before mounting") {
		t.Fatalf("Mount = %v", err)
	}
	if s.PID() != 0 {
		t.Fatal("PID set after a failed mount")
	}
}

func TestMountTimeout(t *testing.T) {
	s := newFuseSystem(Env{WorkDir: t.TempDir()}, recipe{name: "sleep", bin: "sleep",
		args: func(_, _, _ string) []string { return []string{"60"} }})
	s.mountTimeout = 300 * time.Millisecond
	start := time.Now()
	if _, err := s.Mount(context.Background()); err == nil || !strings.Contains(err.Error(), "not mounted") {
		t.Fatalf("Mount = %v", err)
	}
	if d := time.Since(start); d > 30*time.Second {
		t.Fatalf("Mount took %v after a 300ms timeout: the process was not killed", d)
	}
}

// TestRealFUSEMount runs the whole life cycle on a real FUSE daemon: rclone
// serving a local directory (no object store needed).
func TestRealFUSEMount(t *testing.T) {
	testserver.RequireFUSE(t)
	testserver.RequireBinary(t, "rclone", testserver.InstallHint)
	src := t.TempDir()
	if err := os.WriteFile(filepath.Join(src, "hello"), []byte("through fuse"), 0o644); err != nil {
		t.Fatal(err)
	}
	s := newFuseSystem(Env{WorkDir: t.TempDir()}, recipe{name: "rclone-local", bin: "rclone", backend: BackendLocal,
		unsetEnv: []string{"AWS_CA_BUNDLE"},
		args: func(mnt, cache, _ string) []string {
			return []string{"mount", src, mnt, "--cache-dir", cache, "--vfs-cache-mode", "full"}
		}})
	ctx := context.Background()
	for round := range 2 { // mount twice: remounting works
		root, err := s.Mount(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if b, err := os.ReadFile(filepath.Join(root, "hello")); err != nil || string(b) != "through fuse" {
			t.Fatalf("round %d: read %q, %v", round, b, err)
		}
		if s.PID() <= 0 {
			t.Fatal("no PID while mounted")
		}
		if err := s.DropCache(); err == nil {
			t.Fatal("DropCache while mounted succeeded")
		}
		if err := s.Unmount(ctx); err != nil {
			t.Fatal(err)
		}
		if typ, _ := mountFSType(s.mnt); typ != "" || s.PID() != 0 {
			t.Fatalf("after Unmount: mounted as %q, PID %d", typ, s.PID())
		}
	}
	if s.PeakRSS() < 1<<20 {
		t.Errorf("peak RSS %d bytes, want the daemon's (> 1 MiB)", s.PeakRSS())
	}
	if err := s.DropCache(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(s.cache); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("cache still there: %v", err)
	}
}

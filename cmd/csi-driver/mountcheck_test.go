package main

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/basin-csi/basin/internal/testserver"
	"github.com/basin-csi/basin/pkg/mountspec"
	"github.com/basin-csi/basin/pkg/objstore"
	"github.com/basin-csi/basin/pkg/objstore/s3store"
)

// mountExit runs `csi-driver mount args...` as main does and returns the
// exit code, stderr and how long it took.
func mountExit(t *testing.T, args ...string) (int, string, time.Duration) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	var stdout, stderr bytes.Buffer
	start := time.Now()
	code := dispatch(ctx, append([]string{"mount"}, args...), &stdout, &stderr)
	return code, stderr.String(), time.Since(start)
}

// TestMountChecksTheBucket: a bucket the mount could not use fails the
// mount command before it mounts, within --op-timeout, with a message
// that says why and the exit code the node plugin maps to a gRPC code.
func TestMountChecksTheBucket(t *testing.T) {
	srv := testserver.MinIO(t)
	gcs := testserver.GCS(t)
	creds := objstore.Credentials{AccessKeyID: srv.AccessKey, SecretAccessKey: srv.SecretKey}
	admin, err := s3store.NewAdmin(t.Context(), objstore.Config{Backend: objstore.BackendS3, Endpoint: srv.Endpoint, Region: srv.Region, PathStyle: true}, creds)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = admin.Close() }()
	bucket := fmt.Sprintf("basin-check-%d", time.Now().UnixNano())
	if err := admin.CreateBucket(t.Context(), bucket); err != nil {
		t.Fatal(err)
	}
	// A port nothing listens on, and one that accepts and never answers.
	closed, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closedAddr := closed.Addr().String()
	_ = closed.Close()
	hung, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = hung.Close() }()
	go func() {
		for {
			c, err := hung.Accept()
			if err != nil {
				return
			}
			defer func() { _ = c.Close() }()
		}
	}()

	s3 := []string{"--endpoint", srv.Endpoint, "--region", srv.Region, "--path-style"}
	for _, tc := range []struct {
		name      string
		key       string
		args      []string
		code      int
		message   string
		opTimeout time.Duration
	}{
		{"missing bucket", srv.SecretKey, append(s3, "s3://basin-no-such-bucket/p"), mountspec.ExitNotFound, "does not exist", 0},
		{"denied key", "not-the-secret-key", append(s3, "s3://"+bucket+"/p"), mountspec.ExitAccessDenied, "refused the credentials", 0},
		{"unreachable endpoint", srv.SecretKey, []string{"--endpoint", "http://" + closedAddr, "--path-style", "s3://" + bucket}, mountspec.ExitUnavailable, "http://" + closedAddr, 3 * time.Second},
		{"endpoint that never answers", srv.SecretKey, []string{"--endpoint", "http://" + hung.Addr().String(), "--path-style", "s3://" + bucket}, mountspec.ExitUnavailable, "--op-timeout", 2 * time.Second},
		{"missing gs bucket", "", []string{"--endpoint", gcs.Endpoint, "gs://basin-no-such-bucket/p"}, mountspec.ExitNotFound, "does not exist", 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv("AWS_ACCESS_KEY_ID", srv.AccessKey)
			t.Setenv("AWS_SECRET_ACCESS_KEY", tc.key)
			args := append([]string{"--cache-dir", t.TempDir()}, tc.args...)
			limit := mountspec.DefaultOpTimeout
			if tc.opTimeout > 0 {
				args = append(args, "--op-timeout", tc.opTimeout.String())
				limit = tc.opTimeout
			}
			code, stderr, took := mountExit(t, append(args, t.TempDir())...)
			if code != tc.code {
				t.Errorf("exit code %d, want %d\n%s", code, tc.code, stderr)
			}
			if !strings.Contains(stderr, tc.message) {
				t.Errorf("message %q does not say %q", stderr, tc.message)
			}
			if strings.Contains(stderr, tc.key) && tc.key != "" {
				t.Errorf("the message quotes the secret key: %s", stderr)
			}
			if took > limit+2*time.Second {
				t.Errorf("took %v, want within --op-timeout %v", took, limit)
			}
		})
	}
}

func TestMountRefusesUnknownOptions(t *testing.T) {
	code, stderr, _ := mountExit(t, "--cache-dir", t.TempDir(), "--mount-options", "noexec,max_read=4096", "file:///tmp", t.TempDir())
	if code != mountspec.ExitInvalid {
		t.Errorf("exit code %d, want %d\n%s", code, mountspec.ExitInvalid, stderr)
	}
	for _, want := range []string{`"max_read=4096"`, strings.Join(mountspec.AcceptedOptions(), ", ")} {
		if !strings.Contains(stderr, want) {
			t.Errorf("message %q does not name %s", stderr, want)
		}
	}
}

// TestMountReportsVersionSkew: a hand-off file of another spec version
// (node plugin and mount process from different releases) ends the mount
// process with ExitVersion, not ExitInvalid, so the node plugin does not
// call the request invalid.
func TestMountReportsVersionSkew(t *testing.T) {
	path := filepath.Join(t.TempDir(), "mount.json")
	b := fmt.Sprintf(`{"spec":{"version":%d},"credentials":{}}`, mountspec.Version+1)
	if err := os.WriteFile(path, []byte(b), 0o600); err != nil {
		t.Fatal(err)
	}
	code, stderr, _ := mountExit(t, "--fd", "3", "--cache-dir", t.TempDir(), "--spec-file", path)
	if code != mountspec.ExitVersion {
		t.Errorf("exit code %d, want ExitVersion (%d)\n%s", code, mountspec.ExitVersion, stderr)
	}
}

// TestMountWithoutBucketCheckServes: the node plugin's remount heal
// (--no-bucket-check) serves the mount although the store cannot be
// reached, so what is cached stays readable; the same start without the
// flag exits with ExitUnavailable (TestMountChecksTheBucket).
func TestMountWithoutBucketCheckServes(t *testing.T) {
	testserver.RequireFUSE(t)
	closed, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closedAddr := closed.Addr().String()
	_ = closed.Close()
	t.Setenv("AWS_ACCESS_KEY_ID", "basin-test")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "basin-test-secret")
	t.Setenv("AWS_EC2_METADATA_DISABLED", "true")
	mnt := t.TempDir()
	fd := mountFD(t, mnt)
	stop := startMount(t, "", "--fd", fmt.Sprint(fd), "--no-bucket-check", "--cache-dir", t.TempDir(),
		"--endpoint", "http://"+closedAddr, "--path-style", "--op-timeout", "2s", "s3://basin-offline")
	// statfs always reaches the FUSE process: it answers, so it serves.
	waitFor(t, "the mount to answer", func() bool {
		// Bounded: without a server the kernel holds statfs until killed.
		ctx, cancel := context.WithTimeout(t.Context(), 3*time.Second)
		defer cancel()
		return exec.CommandContext(ctx, "stat", "-f", mnt).Run() == nil
	})
	if err := stop(); err != nil {
		t.Errorf("stop: %v", err)
	}
}

func TestNoBucketCheckNeedsFD(t *testing.T) {
	_, err := parseMountArgs([]string{"--no-bucket-check", "file:///tmp", "/mnt"})
	if err == nil || !strings.Contains(err.Error(), "--no-bucket-check needs --fd") {
		t.Errorf("parse: %v, want an error naming --no-bucket-check", err)
	}
}

package fuse

import (
	"context"
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

// s3fsMount mounts bucket on srv with s3fs (the reference tool for modes,
// times and links on S3) until the test ends. Credentials go through a
// 0600 password file, never argv.
func s3fsMount(t *testing.T, srv *testserver.Server, bucket string) string {
	t.Helper()
	bin, err := exec.LookPath("s3fs")
	if err != nil {
		testserver.Unavailable(t, "s3fs not found (install: hack/install-tools.sh)")
	}
	dir := t.TempDir()
	pw := filepath.Join(t.TempDir(), "passwd")
	if err := os.WriteFile(pw, []byte(srv.AccessKey+":"+srv.SecretKey+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, bucket, dir, "-f", "-o", "url="+srv.Endpoint, "-o", "use_path_request_style",
		"-o", "passwd_file="+pw, "-o", "stat_cache_expire=1", "-o", "enable_noobj_cache", "-o", "endpoint="+srv.Region)
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = exec.Command("fusermount", "-u", dir).Run()
		done := make(chan struct{})
		go func() { _ = cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			_ = cmd.Process.Kill()
		}
	})
	deadline := time.Now().Add(20 * time.Second)
	for {
		if out, err := exec.Command("findmnt", "-n", "-o", "FSTYPE", dir).Output(); err == nil && strings.Contains(string(out), "fuse") {
			return dir
		}
		if time.Now().After(deadline) {
			t.Fatalf("s3fs did not mount %s", dir)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// rclone runs rclone against bucket on srv; the remote "minio" is
// configured through the environment (credentials never in argv).
func rclone(t *testing.T, srv *testserver.Server, args ...string) string {
	t.Helper()
	bin, err := exec.LookPath("rclone")
	if err != nil {
		testserver.Unavailable(t, "rclone not found (install: hack/install-tools.sh)")
	}
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, args...)
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "AWS_") { // an AWS_CA_BUNDLE of the host breaks rclone's own transport
			env = append(env, kv)
		}
	}
	cmd.Env = append(env,
		"RCLONE_CONFIG_MINIO_TYPE=s3", "RCLONE_CONFIG_MINIO_PROVIDER=Minio",
		"RCLONE_CONFIG_MINIO_ENDPOINT="+srv.Endpoint, "RCLONE_CONFIG_MINIO_REGION="+srv.Region,
		"RCLONE_CONFIG_MINIO_ACCESS_KEY_ID="+srv.AccessKey, "RCLONE_CONFIG_MINIO_SECRET_ACCESS_KEY="+srv.SecretKey)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("rclone %v: %v\n%s", args, err, out)
	}
	return string(out)
}

// TestInteropS3fsRclone: what Basin writes — a Hugging Face–style tree of
// relative links, an executable, a file with an old mtime — reads the
// same through s3fs, and rclone shows the mtime; a tree with links, modes
// and times written by s3fs, and a time set by rclone, read right through
// Basin; and links in rclone's --links form go both ways through a mount
// with rcloneLinks.
func TestInteropS3fsRclone(t *testing.T) {
	srv := testserver.MinIO(t)
	bucket := newMinIOBucket(t, srv)
	store, err := s3store.New(t.Context(), minioConfig(srv, bucket), minioCreds(srv))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = store.Close() })
	want := time.Date(2020, 1, 1, 0, 0, 0, 0, time.UTC)

	var files map[string]string
	session(t, store, func(dir string) {
		files = hfTree(t, filepath.Join(dir, "basin/hub"))
		run(t, dir, "sh", "-c", "mkdir -p basin/bin && printf '#!/bin/sh\\necho hi\\n' > basin/bin/hi && chmod +x basin/bin/hi")
		run(t, dir, "touch", "-d", "2020-01-01T00:00:00Z", "basin/old.txt")
	})

	s3 := s3fsMount(t, srv, bucket)
	checkTree(t, filepath.Join(s3, "basin/hub"), files)
	if out := run(t, s3, filepath.Join(s3, "basin/bin/hi")); out != "hi\n" {
		t.Errorf("Basin's executable through s3fs printed %q", out)
	}
	if fi, err := os.Stat(filepath.Join(s3, "basin/old.txt")); err != nil || !fi.ModTime().Equal(want) {
		t.Errorf("Basin's mtime through s3fs: %v %v, want %v", fi, err, want)
	}
	if out := rclone(t, srv, "lsl", "minio:"+bucket+"/basin/old.txt"); !strings.Contains(out, "2020-01-01 00:00:00") {
		t.Errorf("rclone lsl of Basin's file: %q, want 2020-01-01 00:00:00", out)
	}

	// The other way: s3fs and rclone write, Basin reads.
	run(t, s3, "sh", "-c", "mkdir -p s3fs/blobs s3fs/snap && printf data > s3fs/blobs/h1 && ln -s ../blobs/h1 s3fs/snap/f && "+
		"printf '#!/bin/sh\\necho s3fs\\n' > s3fs/x && chmod 755 s3fs/x && touch -d 2020-01-01T00:00:00Z s3fs/blobs/h1")
	rclone(t, srv, "touch", "-t", "2020-01-01T00:00:00", "minio:"+bucket+"/rclone/old.txt")
	session(t, store, func(dir string) {
		if target, err := os.Readlink(filepath.Join(dir, "s3fs/snap/f")); err != nil || target != "../blobs/h1" {
			t.Errorf("s3fs's link through Basin: %q %v", target, err)
		}
		if got, err := os.ReadFile(filepath.Join(dir, "s3fs/snap/f")); err != nil || string(got) != "data" {
			t.Errorf("read through s3fs's link: %q %v", got, err)
		}
		if out := run(t, dir, filepath.Join(dir, "s3fs/x")); out != "s3fs\n" {
			t.Errorf("s3fs's executable through Basin printed %q", out)
		}
		for _, name := range []string{"s3fs/blobs/h1", "rclone/old.txt"} {
			if fi, err := os.Stat(filepath.Join(dir, name)); err != nil || !fi.ModTime().Equal(want) {
				t.Errorf("%s through Basin: mtime %v %v, want %v", name, fi.ModTime(), err, want)
			}
		}
	})

	rcloneLinksInterop(t, srv, store, bucket)
}

// rcloneLinksInterop: a snapshot tree of relative links uploaded with
// `rclone copy -l` reads right through a mount with rcloneLinks, and a
// link made through that mount comes back as a link with `rclone copy -l`.
func rcloneLinksInterop(t *testing.T, srv *testserver.Server, store objstore.Store, bucket string) {
	t.Helper()
	local := t.TempDir()
	for _, step := range []func() error{
		func() error { return os.MkdirAll(filepath.Join(local, "blobs"), 0o755) },
		func() error { return os.MkdirAll(filepath.Join(local, "snapshots/rev"), 0o755) },
		func() error { return os.WriteFile(filepath.Join(local, "blobs/h1"), []byte("weights"), 0o644) },
		func() error { return os.Symlink("../../blobs/h1", filepath.Join(local, "snapshots/rev/f")) },
	} {
		if err := step(); err != nil {
			t.Fatal(err)
		}
	}
	rclone(t, srv, "copy", "-l", local, "minio:"+bucket+"/rclonehub")
	wantObject(t, store, "rclonehub/snapshots/rev/f.rclonelink", []byte("../../blobs/h1"))

	sessionWith(t, store, mountspec.Spec{RcloneLinks: true}, func(dir string) {
		rev := filepath.Join(dir, "rclonehub/snapshots/rev")
		wantLink(t, filepath.Join(rev, "f"), "../../blobs/h1", "weights")
		if got := dirTypes(t, rev); len(got) != 1 || got["f"] != os.ModeSymlink {
			t.Errorf("readdir of rclone's links: %v, want only f, a symbolic link", got)
		}
		must(t, "symlink", func() (struct{}, error) {
			return struct{}{}, os.Symlink("../../blobs/h1", filepath.Join(rev, "g"))
		})
	})

	back := t.TempDir()
	rclone(t, srv, "copy", "-l", "minio:"+bucket+"/rclonehub", back)
	for _, name := range []string{"f", "g"} {
		wantLink(t, filepath.Join(back, "snapshots/rev", name), "../../blobs/h1", "weights")
	}
}

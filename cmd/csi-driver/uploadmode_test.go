package main

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/basin-csi/basin/internal/testserver"
	"github.com/basin-csi/basin/pkg/objstore"
)

// TestMountCommandAsyncSuccessor: a `csi-driver mount --upload-mode async`
// process is killed with SIGKILL while its upload is pending (its MinIO
// stopped). The next process on the same cache directory, in either
// upload mode, uploads the file whose close returned, byte for byte, and
// never the one whose writer had not closed it. A file created with O_EXCL
// (no claim at create in async mode) whose name another writer stored
// meanwhile is uploaded over it, that object kept under a conflict name.
func TestMountCommandAsyncSuccessor(t *testing.T) {
	bin := mountBinary(t)
	for _, successor := range []string{"async", "sync"} {
		t.Run("successor "+successor, func(t *testing.T) { asyncSuccessor(t, bin, successor) })
	}
}

func asyncSuccessor(t *testing.T, bin, successorMode string) {
	srv := testserver.NewMinIO(t)
	bucket := fmt.Sprintf("basin-async-%d", time.Now().UnixNano())
	store, _ := newS3Bucket(t, srv, bucket)

	cacheDir := t.TempDir()
	run := mountOnCache(t, bin, srv, bucket, cacheDir)

	mnt := t.TempDir()
	first, firstLog := run(mnt, "async")
	// Learn that the names are free while the store answers: the kernel
	// trusts it for an hour, so the creates below send no lookup.
	for _, name := range []string{"acked", "open", "excl"} {
		if _, err := os.Stat(filepath.Join(mnt, name)); !errors.Is(err, fs.ErrNotExist) {
			t.Fatalf("stat %s: %v, want not found", name, err)
		}
	}
	srv.Stop()
	acked := bytes.Repeat([]byte("acknowledged "), 10000)
	if err := os.WriteFile(filepath.Join(mnt, "acked"), acked, 0o644); err != nil {
		t.Fatalf("write and close with the store down: %v\n%s", err, firstLog)
	}
	// An exclusive create claims its name with its upload in async mode:
	// with the store down it succeeds, and its note says so.
	exclusive := []byte("created exclusively")
	if err := writeExclusive(filepath.Join(mnt, "excl"), exclusive); err != nil {
		t.Fatalf("exclusive create with the store down: %v\n%s", err, firstLog)
	}
	open, err := os.OpenFile(filepath.Join(mnt, "open"), os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := open.Write([]byte("never closed")); err != nil {
		t.Fatal(err)
	}
	writes := filepath.Join(cacheDir, "writes")
	if notes := ackNotes(t, writes); len(notes) != 2 {
		t.Errorf("acknowledgement notes %v, want two", notes)
	}
	killAndRestart(t, first, mnt, open, srv)
	for _, key := range []string{"acked", "open", "excl"} {
		if _, err := store.Stat(t.Context(), key); !errors.Is(err, objstore.ErrNotFound) {
			t.Fatalf("%s in the bucket before the successor: %v", key, err)
		}
	}
	// Another writer stores the exclusively created name meanwhile: the
	// successor's upload keeps that object aside, then puts the file.
	theirs := []byte("another writer's")
	if _, err := store.Put(t.Context(), "excl", bytes.NewReader(theirs), objstore.PutOptions{Size: int64(len(theirs))}); err != nil {
		t.Fatal(err)
	}

	mnt2 := t.TempDir()
	second, secondLog := run(mnt2, successorMode)
	waitFor(t, "the successor's upload", func() bool {
		_, err := store.Stat(t.Context(), "acked")
		return err == nil
	})
	if got := objectBytes(t, store, "acked"); !bytes.Equal(got, acked) {
		t.Errorf("acked in the bucket: %d bytes, want the %d written", len(got), len(acked))
	}
	waitFor(t, "the exclusive file's upload", func() bool { return bytes.Equal(objectBytes(t, store, "excl"), exclusive) })
	page, err := store.List(t.Context(), objstore.ListOptions{Prefix: "excl.conflict-"})
	if err != nil {
		t.Fatal(err)
	}
	if len(page.Objects) != 1 || !bytes.Equal(objectBytes(t, store, page.Objects[0].Key), theirs) {
		t.Errorf("kept aside: %v, want one object holding the other writer's content", page.Objects)
	}
	if _, err := store.Stat(t.Context(), "open"); !errors.Is(err, objstore.ErrNotFound) {
		t.Errorf("the file never closed is in the bucket: %v", err)
	}
	waitFor(t, "the staged files to go", func() bool { return len(stagedFiles(t, writes)) == 0 })
	if got, err := os.ReadFile(filepath.Join(mnt2, "acked")); err != nil || !bytes.Equal(got, acked) {
		t.Errorf("read through the successor: %d bytes (%v), want %d", len(got), err, len(acked))
	}
	if err := second.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if err := second.Wait(); err != nil {
		t.Errorf("successor exit: %v\n%s", err, secondLog)
	}
}

// mountOnCache returns a starter of `csi-driver mount` processes of
// bucket on srv, all on cacheDir, in the given upload mode; names known
// absent stay so for an hour (no lookup when the store is down).
func mountOnCache(t *testing.T, bin string, srv *testserver.Server, bucket, cacheDir string) func(mnt, mode string) (*exec.Cmd, *bytes.Buffer) {
	return func(mnt, mode string) (*exec.Cmd, *bytes.Buffer) {
		t.Helper()
		return startMountProcess(t, bin, mnt, []string{"AWS_ACCESS_KEY_ID=" + srv.AccessKey, "AWS_SECRET_ACCESS_KEY=" + srv.SecretKey},
			"--endpoint", srv.Endpoint, "--region", srv.Region, "--path-style",
			"--cache-dir", cacheDir, "--upload-mode", mode, "--negative-metadata-ttl", "1h",
			"s3://"+bucket, mnt)
	}
}

// killAndRestart SIGKILLs the mount process cmd while open is a file
// still open on its mount mnt, closes that file (its connection is gone),
// detaches the dead mount and starts the stopped store srv again.
func killAndRestart(t *testing.T, cmd *exec.Cmd, mnt string, open *os.File, srv *testserver.Server) {
	t.Helper()
	if err := cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	_ = cmd.Wait()
	_ = open.Close()
	if err := syscall.Unmount(mnt, syscall.MNT_DETACH); err != nil {
		t.Fatalf("detach the dead mount: %v", err)
	}
	if err := srv.Start(); err != nil {
		t.Fatal(err)
	}
}

// writeExclusive creates name with O_EXCL, writes data and closes.
func writeExclusive(name string, data []byte) error {
	f, err := os.OpenFile(name, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o644)
	if err != nil {
		return err
	}
	_, err = f.Write(data)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

// objectBytes is key's content, nil if it cannot be read.
func objectBytes(t *testing.T, store objstore.Store, key string) []byte {
	t.Helper()
	body, _, err := store.Read(t.Context(), key, objstore.ReadOptions{Length: -1})
	if err != nil {
		return nil
	}
	defer func() { _ = body.Close() }()
	b, err := io.ReadAll(body)
	if err != nil {
		return nil
	}
	return b
}

func stagedFiles(t *testing.T, dir string) []string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		if !strings.HasPrefix(e.Name(), "claim-") {
			names = append(names, e.Name())
		}
	}
	return names
}

func ackNotes(t *testing.T, dir string) []string {
	t.Helper()
	var notes []string
	for _, name := range stagedFiles(t, dir) {
		if strings.HasSuffix(name, ".ack") {
			notes = append(notes, name)
		}
	}
	return notes
}

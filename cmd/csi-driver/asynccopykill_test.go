package main

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/basin-csi/basin/internal/testserver"
	"github.com/basin-csi/basin/pkg/objstore"
)

// TestMountCommandAsyncCopyKilled: a `cp -r`-like copy into new
// directories of a `csi-driver mount --upload-mode async` volume, file
// after file, is cut by a SIGKILL of the FUSE process while files closed
// with the store down are still waiting for their upload. The next
// process on the same cache directory uploads every file whose close
// returned, each byte for byte, and not the one being written when the
// process died.
func TestMountCommandAsyncCopyKilled(t *testing.T) {
	bin := mountBinary(t)
	srv := testserver.NewMinIO(t)
	bucket := fmt.Sprintf("basin-async-copy-%d", time.Now().UnixNano())
	store, _ := newS3Bucket(t, srv, bucket)
	cacheDir := t.TempDir()
	run := mountOnCache(t, bin, srv, bucket, cacheDir)
	const dirs, perDir = 6, 40
	name := func(d, f int) string { return fmt.Sprintf("copy/d%02d/f%03d", d, f) }
	content := func(d, f int) []byte { return randContent(uint64(d*1000+f), 64<<10) }

	mnt := t.TempDir()
	first, firstLog := run(mnt, "async")
	// The directories, and the names in them known free while the store
	// answers: the kernel trusts that for an hour, so the creates after
	// the store stops send no lookup.
	for d := range dirs {
		if err := os.MkdirAll(filepath.Join(mnt, fmt.Sprintf("copy/d%02d", d)), 0o755); err != nil {
			t.Fatalf("mkdir: %v\n%s", err, firstLog)
		}
		for f := range perDir {
			if _, err := os.Stat(filepath.Join(mnt, name(d, f))); !errors.Is(err, fs.ErrNotExist) {
				t.Fatalf("stat %s: %v, want not found", name(d, f), err)
			}
		}
	}
	var closed []string
	copyDir := func(d int) {
		t.Helper()
		for f := range perDir {
			if err := os.WriteFile(filepath.Join(mnt, name(d, f)), content(d, f), 0o644); err != nil {
				t.Fatalf("write and close %s: %v\n%s", name(d, f), err, firstLog)
			}
			closed = append(closed, name(d, f))
		}
	}
	// Half the copy with the store up, the rest with it down: those
	// closes return with their uploads pending.
	for d := range dirs / 2 {
		copyDir(d)
	}
	srv.Stop()
	for d := dirs / 2; d < dirs; d++ {
		copyDir(d)
	}
	// The file being written when the process dies.
	cut, err := os.OpenFile(filepath.Join(mnt, "copy/cut"), os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cut.Write(content(99, 0)[:1000]); err != nil {
		t.Fatal(err)
	}
	if notes := ackNotes(t, filepath.Join(cacheDir, "writes")); len(notes) < dirs/2*perDir {
		t.Errorf("%d files acknowledged and pending at the kill, want at least the %d closed with the store down", len(notes), dirs/2*perDir)
	}
	killAndRestart(t, first, mnt, cut, srv)

	mnt2 := t.TempDir()
	second, secondLog := run(mnt2, "async")
	waitFor(t, "every closed file in the bucket", func() bool {
		for _, key := range closed {
			if _, err := store.Stat(t.Context(), key); err != nil {
				return false
			}
		}
		return true
	})
	for d := range dirs {
		for f := range perDir {
			if got := objectBytes(t, store, name(d, f)); !bytes.Equal(got, content(d, f)) {
				t.Errorf("%s in the bucket: %d bytes, not the %d written", name(d, f), len(got), len(content(d, f)))
			}
		}
	}
	if _, err := store.Stat(t.Context(), "copy/cut"); !errors.Is(err, objstore.ErrNotFound) {
		t.Errorf("the file never closed is in the bucket: %v", err)
	}
	if err := second.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if err := second.Wait(); err != nil {
		t.Errorf("successor exit: %v\n%s", err, secondLog)
	}
}

// randContent is n bytes of a PCG stream seeded with seed.
func randContent(seed uint64, n int) []byte {
	r := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(r.Uint32())
	}
	return b
}

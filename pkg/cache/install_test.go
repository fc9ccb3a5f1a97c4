package cache

import (
	"bytes"
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/basin-csi/basin/pkg/objstore"
	"github.com/basin-csi/basin/pkg/objstore/objstoretest"
)

// stage writes data into the cache's staging directory and uploads it.
func stage(t *testing.T, c *Cache, fake *objstoretest.Fake, key string, data []byte) (objstore.ObjectInfo, string) {
	t.Helper()
	f, err := os.CreateTemp(c.StagingDir(), "w-")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.Write(data); err != nil {
		t.Fatal(err)
	}
	_ = f.Close()
	return put(t, fake, key, data), f.Name()
}

func TestInstall(t *testing.T) {
	c, fake, _ := newFixture(t, testOpts())
	data := randBytes(800, 333*kib)
	info, staged := stage(t, c, fake, "ckpt/step-1", data)
	if err := c.Install(context.Background(), info, staged); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(staged); !errors.Is(err, os.ErrNotExist) {
		t.Error("staged file was not moved")
	}
	fake.ResetCounters()
	h := openObj(t, c, info)
	p, ok := h.LocalPath()
	if !ok {
		t.Fatal("installed object has no LocalPath")
	}
	if b, _ := os.ReadFile(p); !bytes.Equal(b, data) {
		t.Fatal("installed data file differs")
	}
	if !bytes.Equal(readAll(t, h, 100*kib), data) {
		t.Fatal("wrong bytes")
	}
	_ = h.Close()
	got, err := c.Stat(context.Background(), "ckpt/step-1")
	if err != nil || got.Version != info.Version {
		t.Fatalf("Stat = %+v, %v", got, err)
	}
	if n := fake.Calls(objstoretest.OpRead) + fake.Calls(objstoretest.OpStat); n != 0 {
		t.Errorf("%d requests after write-through", n)
	}
	if _, err := c.Verify(context.Background()); err != nil {
		t.Fatal(err)
	}
}

func TestInstallReplacesPinnedVersion(t *testing.T) {
	c, fake, _ := newFixture(t, testOpts())
	v1 := randBytes(810, 200*kib)
	info1 := put(t, fake, "f", v1)
	old := openObj(t, c, info1)
	readAll(t, old, 64*kib)

	v2 := randBytes(811, 150*kib)
	info2, staged := stage(t, c, fake, "f", v2)
	if err := c.Install(context.Background(), info2, staged); err != nil {
		t.Fatal(err)
	}
	fake.ResetCounters()
	if !bytes.Equal(readAll(t, old, 64*kib), v1) {
		t.Fatal("pinned old version changed under its handle")
	}
	if got := readObject(t, c, info2); !bytes.Equal(got, v2) {
		t.Fatal("new version: wrong bytes")
	}
	if n := fake.Calls(objstoretest.OpRead); n != 0 {
		t.Errorf("%d GETs", n)
	}
	oldPath := old.o.path
	_ = old.Close()
	if _, err := os.Stat(oldPath); !errors.Is(err, os.ErrNotExist) {
		t.Error("old version's data file outlived its last handle")
	}
	// The same version installed again while a handle pins it.
	h := openObj(t, c, info2)
	again := filepath.Join(c.StagingDir(), "again")
	if err := os.WriteFile(again, v2, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := c.Install(context.Background(), info2, again); err != nil {
		t.Fatal(err)
	}
	_ = h.Close()
	if got := readObject(t, c, info2); !bytes.Equal(got, v2) {
		t.Fatal("reinstalled version: wrong bytes")
	}
	if _, err := c.Verify(context.Background()); err != nil {
		t.Fatal(err)
	}
}

func TestInstallErrors(t *testing.T) {
	c, fake, _ := newFixture(t, testOpts())
	info, staged := stage(t, c, fake, "x", []byte("abc"))
	info.Size = 4
	if err := c.Install(context.Background(), info, staged); !errors.Is(err, ErrInvalidArgument) {
		t.Errorf("size mismatch: %v", err)
	}
	if err := c.Install(context.Background(), info, filepath.Join(c.StagingDir(), "nope")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("missing staged file: %v", err)
	}
	info.Key = ""
	if err := c.Install(context.Background(), info, staged); !errors.Is(err, ErrInvalidArgument) {
		t.Errorf("empty key: %v", err)
	}
}

// TestInstallBeyondCapacity: a written file larger than the whole cache is
// not installed (ErrNoSpace), the cache stays within its capacity, and the
// key's attributes are the new version's all the same.
func TestInstallBeyondCapacity(t *testing.T) {
	opts := testOpts()
	opts.CacheSize = 256 * kib
	c, fake, _ := newFixture(t, opts)
	old := put(t, fake, "f", randBytes(820, 10*kib))
	readObject(t, c, old)
	info, staged := stage(t, c, fake, "f", randBytes(821, 512*kib))
	if err := c.Install(context.Background(), info, staged); !errors.Is(err, ErrNoSpace) {
		t.Fatalf("Install of 512 KiB into a 256 KiB cache: %v, want ErrNoSpace", err)
	}
	if used := c.Stats().UsedBytes; used > opts.CacheSize {
		t.Errorf("used %d above capacity %d", used, opts.CacheSize)
	}
	if _, err := os.Stat(staged); err != nil {
		t.Errorf("staged file: %v; it stays the caller's", err)
	}
	fake.ResetCounters()
	got, err := c.Stat(context.Background(), "f")
	if err != nil || got.Version != info.Version {
		t.Fatalf("Stat = %+v, %v; want version %s", got, err, info.Version)
	}
	if n := fake.Calls(objstoretest.OpStat); n != 0 {
		t.Errorf("Stat asked the bucket %d times", n)
	}
}

// TestMoveFileAcrossFileSystems: a staged file on another file system
// than the cache (rename fails with EXDEV) is copied into place with its
// content and mode, the source goes, and no temporary file stays.
func TestMoveFileAcrossFileSystems(t *testing.T) {
	src := filepath.Join(mountTmpfs(t, "4m"), "staged")
	want := bytes.Repeat([]byte("basin"), 100_000)
	if err := os.WriteFile(src, want, 0o644); err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(t.TempDir(), "data", "ab")
	dst := filepath.Join(dir, "object")
	if err := os.Rename(src, filepath.Join(t.TempDir(), "probe")); !errors.Is(err, syscall.EXDEV) {
		t.Fatalf("rename across the tmpfs: %v, want EXDEV", err)
	}
	if err := moveFile(src, dst); err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(dst)
	if err != nil || !bytes.Equal(got, want) {
		t.Fatalf("moved file: %d bytes, %v; want %d bytes", len(got), err, len(want))
	}
	if st, err := os.Stat(dst); err != nil || st.Mode() != fileMode {
		t.Errorf("moved file mode %v, %v; want %v", st.Mode(), err, fs.FileMode(fileMode))
	}
	if _, err := os.Stat(src); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("source still there: %v", err)
	}
	if ents, err := os.ReadDir(dir); err != nil || len(ents) != 1 {
		t.Errorf("destination directory holds %v, %v; want only the object", ents, err)
	}
}

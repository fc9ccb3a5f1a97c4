package fuse

import (
	"bytes"
	"errors"
	"fmt"
	"github.com/basin-csi/basin/pkg/mountspec"
	"os"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/basin-csi/basin/internal/mountdefaults"
	"github.com/basin-csi/basin/pkg/objstore"
)

// dropPages drops the kernel's page cache of a file on the mount
// (POSIX_FADV_DONTNEED: no root needed, unlike drop_caches).
func dropPages(t *testing.T, p string) {
	t.Helper()
	must(t, "fadvise", func() (struct{}, error) {
		f, err := os.Open(p)
		if err != nil {
			return struct{}{}, err
		}
		defer func() { _ = f.Close() }()
		return struct{}{}, unix.Fadvise(int(f.Fd()), 0, 0, unix.FADV_DONTNEED)
	})
}

// TestOpenKernelSendsNoOpens reads small and large files cold, warm and
// after their pages were dropped on a read-only mount in OpenKernel mode:
// the content is right every time and only the very first open of the
// connection reaches the file system.
func TestOpenKernelSendsNoOpens(t *testing.T) {
	forEachStore(t, []cacheKind{realCache, fakeNoLocal}, func(t *testing.T, store objstore.Store, kind cacheKind) {
		files := map[string][]byte{}
		for i := range 12 {
			name := fmt.Sprintf("d%d/f%d", i%3, i)
			files[name] = randomBytes(100+i*9000, byte(i))
		}
		files["big"] = randomBytes(9<<20+123, 99) // sequential reads with prefetch
		for k, v := range files {
			put(t, store, k, v)
		}
		m := mountStore(t, store, mountSpec{cache: kind, cfg: Config{Spec: mountspec.Spec{ReadOnly: true, OpenMode: mountdefaults.OpenKernel, MetadataTTL: -1, NegativeMetadataTTL: -1}}})
		check := func(phase string) {
			t.Helper()
			for k, want := range files {
				got := must(t, "read", func() ([]byte, error) { return os.ReadFile(path(m, k)) })
				if !bytes.Equal(got, want) {
					t.Fatalf("%s: %s: %d bytes, want %d (first difference at %d)", phase, k, len(got), len(want), commonPrefix(got, want))
				}
			}
		}
		check("cold")
		cold := m.fsys.Stats()
		check("warm")
		warm := m.fsys.Stats()
		if warm.UserReadBytes != cold.UserReadBytes {
			t.Errorf("warm pass read %d bytes through READ, want 0 (the page cache was dropped at open)", warm.UserReadBytes-cold.UserReadBytes)
		}
		for k := range files {
			dropPages(t, path(m, k))
		}
		check("after dropping the pages")
		after := m.fsys.Stats()
		if after.UserReadBytes == warm.UserReadBytes {
			t.Error("no READ after the pages were dropped: the test proves nothing")
		}
		if after.FileOpens != 1 {
			t.Errorf("%d OPEN requests for %d files read 3 times, want 1 (the ENOSYS one)", after.FileOpens, len(files))
		}
		if n := m.fsys.counters.readFlushes.Load(); n != 1 {
			t.Errorf("%d FLUSH requests, want 1 (the ENOSYS one)", n)
		}
		if after.PassthroughOpens+after.UserOpens != 0 {
			t.Errorf("%d passthrough and %d user-space opens, want none", after.PassthroughOpens, after.UserOpens)
		}
		if n := m.fsys.inodeReads.open(); n == 0 || n > inodeReadersTotal {
			t.Errorf("%d inode readers open, want 1..%d", n, inodeReadersTotal)
		}
	})
}

// TestOpenKernelSeesChangeAfterTTL: the kernel keeps a file's pages across
// opens, but once the TTL has passed a changed object (new size, or same
// size and a new modification time) is read in its new version.
func TestOpenKernelSeesChangeAfterTTL(t *testing.T) {
	const ttl = 1500 * time.Millisecond
	forEachStore(t, []cacheKind{realCache, fakeLocal}, func(t *testing.T, store objstore.Store, kind cacheKind) {
		put(t, store, "grow", []byte("v1"))
		put(t, store, "same", []byte("one-1"))
		m := mountStore(t, store, mountSpec{cache: kind, cfg: Config{Spec: mountspec.Spec{ReadOnly: true, OpenMode: mountdefaults.OpenKernel, MetadataTTL: ttl, NegativeMetadataTTL: ttl}}})
		read := func(name string) string {
			return string(must(t, "read", func() ([]byte, error) { return os.ReadFile(path(m, name)) }))
		}
		cached := time.Now()
		if read("grow") != "v1" || read("same") != "one-1" {
			t.Fatal("first reads differ")
		}
		time.Sleep(20 * time.Millisecond) // a modification time the kernel can tell apart
		put(t, store, "grow", []byte("version-2"))
		put(t, store, "same", []byte("two-2"))
		g, s := read("grow"), read("same")
		if time.Since(cached) >= ttl {
			t.Fatal("the reads took longer than the TTL: the test proves nothing")
		}
		if g != "v1" || s != "one-1" {
			t.Errorf("within the TTL read %q and %q, want the cached v1 and one-1", g, s)
		}
		time.Sleep(ttl + 300*time.Millisecond)
		if got := read("grow"); got != "version-2" {
			t.Errorf("grown file after the TTL = %q, want version-2", got)
		}
		if got := read("same"); got != "two-2" {
			t.Errorf("same-size file after the TTL = %q, want two-2", got)
		}
	})
}

// TestOpenKernelValidation: the mode needs a read-only mount and a known
// value.
func TestOpenKernelValidation(t *testing.T) {
	for _, tc := range []struct {
		name string
		cfg  Config
		ok   bool
	}{
		{"kernel read-only", Config{Spec: mountspec.Spec{OpenMode: mountdefaults.OpenKernel, ReadOnly: true}}, true},
		{"server read-write", Config{Spec: mountspec.Spec{OpenMode: mountdefaults.OpenServer}}, true},
		{"default", Config{}, true},
		{"kernel read-write", Config{Spec: mountspec.Spec{OpenMode: mountdefaults.OpenKernel}}, false},
		{"unknown", Config{Spec: mountspec.Spec{OpenMode: "client", ReadOnly: true}}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.cfg.Validate()
			if ok := err == nil; ok != tc.ok {
				t.Fatalf("Validate = %v, want ok=%v", err, tc.ok)
			}
			if err != nil && !errors.Is(err, ErrInvalidConfig) {
				t.Errorf("Validate = %v, want ErrInvalidConfig", err)
			}
		})
	}
}

// TestOpenKernelBoundedReaders reads many files concurrently through a
// mount whose inode readers are bounded at 2 for the whole mount: readers
// are closed while others are in use (a spliced reply must still find its
// descriptor), the content is right, the bound holds, and forgetting the
// inodes closes every reader.
func TestOpenKernelBoundedReaders(t *testing.T) {
	for _, kind := range []cacheKind{realCache, fakeLocal} { // the fake closes the data file with the handle
		t.Run(string(kind), func(t *testing.T) { testOpenKernelBoundedReaders(t, kind) })
	}
}

func testOpenKernelBoundedReaders(t *testing.T, kind cacheKind) {
	store, _ := newFileStore(t)
	files := map[string][]byte{}
	for i := range 40 {
		files[fmt.Sprintf("f%02d", i)] = randomBytes(64<<10+i*4099, byte(i))
	}
	for k, v := range files {
		put(t, store, k, v)
	}
	cfg := Config{Spec: mountspec.Spec{ReadOnly: true, OpenMode: mountdefaults.OpenKernel, MetadataTTL: -1, NegativeMetadataTTL: -1}}
	fsys, err := newFS(cfg, store, newBackend(t, store, mountSpec{cfg: cfg, cache: kind}))
	if err != nil {
		t.Fatal(err)
	}
	fsys.inodeReads = newInodeReaders(1, 2)
	m := mountFS(t, fsys)
	for pass := range 3 {
		errs := make(chan error, len(files))
		for k, want := range files {
			go func() {
				got, err := os.ReadFile(path(m, k))
				if err == nil && !bytes.Equal(got, want) {
					err = fmt.Errorf("%s: %d bytes differ from the %d written at %d", k, len(got), len(want), commonPrefix(got, want))
				}
				errs <- err
			}()
		}
		for range files {
			if err := <-errs; err != nil {
				t.Fatalf("pass %d: %v", pass, err)
			}
		}
		if n := fsys.inodeReads.open(); n > 2 {
			t.Fatalf("pass %d: %d inode readers open, bound 2", pass, n)
		}
		for k := range files {
			dropPages(t, path(m, k))
		}
	}
	if got := fsys.Stats().InodeReaders; got < int64(2*len(files)) {
		t.Errorf("%d inode readers opened over 3 passes of %d files: the pages were not dropped", got, len(files))
	}
	if err := os.WriteFile("/proc/sys/vm/drop_caches", []byte("2"), 0); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(5 * time.Second)
	for fsys.inodeReads.open() > 0 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if n := fsys.inodeReads.open(); n != 0 {
		t.Errorf("%d inode readers open after the kernel forgot the inodes", n)
	}
}

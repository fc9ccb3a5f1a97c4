package fuse

import (
	"errors"
	"os"
	"syscall"
	"testing"
	"time"

	"github.com/basin-csi/basin/pkg/mountspec"
	"github.com/basin-csi/basin/pkg/objstore"
)

// TestRenameOpenWriterLeavesNoOldName: a file renamed while its write
// state is still held, clean at the rename: by its writer (uploaded by an
// fsync), or by a reader that opened it while it was written (a writer
// under a directory makes its rename EBUSY). The last close must not
// install the uploaded version into the cache under the old name, which
// would make the old name show up again after the rename (uploadMode
// sync, the default).
func TestRenameOpenWriterLeavesNoOldName(t *testing.T) {
	minio := newMinIOStore(t, nil)
	// With a metadata TTL, as mounts have by default: a cached name is
	// believed without asking the bucket.
	m := mountStore(t, minio, mountSpec{cfg: Config{Spec: mountspec.Spec{MetadataTTL: time.Hour}}})
	must(t, "mkdir", func() (struct{}, error) { return struct{}{}, os.Mkdir(path(m, "d"), 0o755) })
	for _, tc := range []struct {
		name, file, from, to, oldKey, newKey string
		reader                               bool // the writer closes before the rename
	}{
		{"file", "log", "log", "log.1", "log", "log.1", false},
		{"file held by a reader", "out", "out", "out.1", "out", "out.1", true},
		{"directory held by a reader", "d/log", "d", "e", "d/log", "e/log", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := must(t, "create", func() (*os.File, error) { return os.Create(path(m, tc.file)) })
			must(t, "write", func() (int, error) { return f.Write([]byte("rotated")) })
			must(t, "fsync", func() (struct{}, error) { return struct{}{}, f.Sync() })
			last := f
			if tc.reader {
				last = must(t, "open reader", func() (*os.File, error) { return os.Open(path(m, tc.file)) })
				must(t, "close writer", func() (struct{}, error) { return struct{}{}, f.Close() })
			}
			must(t, "rename", func() (struct{}, error) { return struct{}{}, os.Rename(path(m, tc.from), path(m, tc.to)) })
			must(t, "close", func() (struct{}, error) { return struct{}{}, last.Close() })
			// The write state is finished once its staged file is gone
			// (installed into the cache or removed).
			waitUntil(t, "the write state to finish", func() bool {
				left, err := os.ReadDir(m.fsys.writes.dir)
				return err == nil && len(left) == 0
			})
			wantObject(t, minio, tc.newKey, []byte("rotated"))
			wantNoObject(t, minio, tc.oldKey)
			if info, err := m.cache.Stat(t.Context(), tc.oldKey); !errors.Is(err, objstore.ErrNotFound) {
				t.Errorf("cache Stat of the old name %s: %+v, %v; want not found", tc.oldKey, info, err)
			}
			if _, err := within(t, "stat old name", func() (os.FileInfo, error) { return os.Stat(path(m, tc.oldKey)) }); errnoOf(err) != syscall.ENOENT {
				t.Errorf("stat of the old name %s: %v, want ENOENT", tc.oldKey, err)
			}
		})
	}
}

// TestWrittenFileIsInstalled: once its last handle is gone, a file
// written here becomes the cache's complete copy of the uploaded
// version (finish installs it while its node stands for the key), in
// both upload modes.
func TestWrittenFileIsInstalled(t *testing.T) {
	minio := newMinIOStore(t, nil)
	for name, cfg := range map[string]Config{"sync": {}, "async": asyncCfg} {
		t.Run(name, func(t *testing.T) {
			m := mountStore(t, minio, mountSpec{cfg: cfg})
			key := "kept-" + name
			writeFile(t, path(m, key), []byte("kept"), os.O_CREATE|os.O_WRONLY|os.O_TRUNC)
			waitUntil(t, "the write state to finish", func() bool {
				left, err := os.ReadDir(m.fsys.writes.dir)
				return err == nil && len(left) == 0 && m.fsys.Stats().PendingUploads == 0
			})
			info, err := m.cache.Stat(t.Context(), key)
			if err != nil {
				t.Fatalf("cache Stat: %v", err)
			}
			h, err := m.cache.OpenObject(t.Context(), info)
			if err != nil {
				t.Fatalf("OpenObject: %v", err)
			}
			defer func() { _ = h.Close() }()
			if _, local := h.LocalFile(); !local {
				t.Error("the written file is not whole in the cache")
			}
		})
	}
}

package fuse

import (
	"fmt"
	"os"
	"testing"

	"github.com/hanwen/go-fuse/v2/fs"
)

// TestAsyncUploadAfterForget: the kernel forgets a closed file's inode
// (an entry invalidated here; memory pressure does the same) while its
// upload waits in the queue. The acknowledged content still ends in the
// bucket under its name; meanwhile a lookup of the name and a listing of
// its directory upload it first and show it, and a rename of its
// directory moves it along.
func TestAsyncUploadAfterForget(t *testing.T) {
	minio := newMinIOStore(t, nil)
	store := newGateStore(minio)
	m := mountStore(t, store, mountSpec{cfg: asyncCfg})
	must(t, "mkdir", func() (struct{}, error) { return struct{}{}, os.Mkdir(path(m, "d"), 0o755) })
	root := m.fsys.root.EmbeddedInode()

	// busy holds every PUT and keeps every worker on one: the next
	// file's job waits in the queue.
	busy := func(t *testing.T, round int) {
		t.Helper()
		store.hold()
		for i := range asyncUploadWorkers {
			writeFile(t, path(m, fmt.Sprintf("busy%d-%02d", round, i)), []byte("busy"), os.O_CREATE|os.O_WRONLY|os.O_TRUNC)
		}
		waitUntil(t, "the workers' PUTs", func() bool { return store.inFlight.Load() == asyncUploadWorkers })
	}
	forget := func(t *testing.T, dir *fs.Inode, name string) {
		t.Helper()
		waitUntil(t, "the kernel to forget "+name, func() bool {
			_ = dir.NotifyEntry(name)
			return dir.GetChild(name) == nil
		})
	}
	// during runs op while the PUTs are held, and lets them go once op
	// has its own upload in flight.
	during := func(t *testing.T, what string, op func() error) {
		t.Helper()
		done := make(chan error, 1)
		go func() { done <- op() }()
		waitUntil(t, what+"'s upload", func() bool { return store.inFlight.Load() == asyncUploadWorkers+1 })
		store.open()
		if err := <-done; err != nil {
			t.Fatalf("%s: %v", what, err)
		}
	}

	t.Run("lookup", func(t *testing.T) {
		busy(t, 1)
		data := []byte("acknowledged")
		writeFile(t, path(m, "x"), data, os.O_CREATE|os.O_WRONLY|os.O_TRUNC)
		forget(t, root, "x")
		during(t, "stat", func() error {
			st, err := os.Stat(path(m, "x"))
			if err == nil && st.Size() != int64(len(data)) {
				err = fmt.Errorf("size %d, want %d", st.Size(), len(data))
			}
			return err
		})
		waitUntil(t, "the pending count to drop", func() bool { return m.fsys.Stats().PendingUploads == 0 })
		wantObject(t, minio, "x", data)
	})
	t.Run("listing", func(t *testing.T) {
		busy(t, 3)
		data := []byte("listed")
		writeFile(t, path(m, "d/z"), data, os.O_CREATE|os.O_WRONLY|os.O_TRUNC)
		forget(t, root.GetChild("d"), "z")
		during(t, "readdir", func() error {
			names, err := os.ReadDir(path(m, "d"))
			if err == nil && (len(names) != 1 || names[0].Name() != "z") {
				err = fmt.Errorf("listing %v, want [z]", names)
			}
			return err
		})
		waitUntil(t, "the pending count to drop", func() bool { return m.fsys.Stats().PendingUploads == 0 })
		wantObject(t, minio, "d/z", data)
	})
	t.Run("directory renamed", func(t *testing.T) {
		busy(t, 2)
		data := []byte("moves with its directory")
		writeFile(t, path(m, "d/y"), data, os.O_CREATE|os.O_WRONLY|os.O_TRUNC)
		forget(t, root.GetChild("d"), "y")
		during(t, "rename", func() error { return os.Rename(path(m, "d"), path(m, "e")) })
		waitUntil(t, "the pending count to drop", func() bool { return m.fsys.Stats().PendingUploads == 0 })
		wantObject(t, minio, "e/y", data)
		wantObject(t, minio, "e/z", []byte("listed"))
		wantNoObject(t, minio, "d/y")
	})
}

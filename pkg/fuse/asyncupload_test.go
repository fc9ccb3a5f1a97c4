package fuse

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/basin-csi/basin/internal/cacheusage"
	"github.com/basin-csi/basin/internal/mountdefaults"
	"github.com/basin-csi/basin/pkg/mountspec"
	"github.com/basin-csi/basin/pkg/objstore"
)

// gateStore holds every PUT until the gate opens, fails them while down,
// and counts the PUTs in flight (the most at once too) and the keys put.
type gateStore struct {
	objstore.Store

	mu   sync.Mutex
	gate chan struct{} // closed: PUTs go through
	down bool
	keys map[string]int
	lose map[string]bool // keys whose next PUT is stored and then fails

	inFlight, maxInFlight atomic.Int64
}

var errStoreDown = errors.New("test: store down")

func newGateStore(s objstore.Store) *gateStore {
	g := &gateStore{Store: s, gate: make(chan struct{}), keys: map[string]int{}}
	close(g.gate)
	return g
}

// hold makes the next PUTs wait; open lets them through.
func (g *gateStore) hold() {
	g.mu.Lock()
	g.gate = make(chan struct{})
	g.mu.Unlock()
}

func (g *gateStore) open() {
	g.mu.Lock()
	select {
	case <-g.gate:
	default:
		close(g.gate)
	}
	g.mu.Unlock()
}

func (g *gateStore) setDown(down bool) {
	g.mu.Lock()
	g.down = down
	g.mu.Unlock()
}

// loseAnswer makes key's next PUT store the object and fail, as when
// the store's answer is lost.
func (g *gateStore) loseAnswer(key string) {
	g.mu.Lock()
	if g.lose == nil {
		g.lose = map[string]bool{}
	}
	g.lose[key] = true
	g.mu.Unlock()
}

func (g *gateStore) puts(key string) int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.keys[key]
}

func (g *gateStore) Put(ctx context.Context, key string, body io.Reader, opts objstore.PutOptions) (objstore.ObjectInfo, error) {
	n := g.inFlight.Add(1)
	defer g.inFlight.Add(-1)
	for {
		m := g.maxInFlight.Load()
		if n <= m || g.maxInFlight.CompareAndSwap(m, n) {
			break
		}
	}
	g.mu.Lock()
	gate, down, lose := g.gate, g.down, g.lose[key]
	delete(g.lose, key)
	g.keys[key]++
	g.mu.Unlock()
	select {
	case <-gate:
	case <-ctx.Done():
		return objstore.ObjectInfo{}, ctx.Err()
	}
	if down {
		return objstore.ObjectInfo{}, errStoreDown
	}
	info, err := g.Store.Put(ctx, key, body, opts)
	if err == nil && lose {
		return objstore.ObjectInfo{}, errors.New("test: the answer was lost")
	}
	return info, err
}

var asyncCfg = Config{Spec: mountspec.Spec{UploadMode: mountdefaults.UploadAsync}}

// waitUntil polls cond every 20 ms for up to a minute.
func waitUntil(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(time.Minute); !cond(); time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
	}
}

func objectThere(t *testing.T, s objstore.Store, key string) bool {
	_, err := s.Stat(t.Context(), key)
	return err == nil
}

// TestAsyncUploadClose: with uploadMode async, close returns while the
// object is not in the bucket yet (every PUT held); stat, read and a
// listing show the written file meanwhile; the object then appears byte
// for byte. In sync mode the object is there when close returns.
func TestAsyncUploadClose(t *testing.T) {
	minio := newMinIOStore(t, nil)
	store := newGateStore(minio)
	m := mountStore(t, store, mountSpec{cfg: asyncCfg})
	data := randomBytes(300<<10+7, 3)

	store.hold()
	writeFile(t, path(m, "a.bin"), data, os.O_CREATE|os.O_WRONLY|os.O_TRUNC)
	wantNoObject(t, minio, "a.bin")
	st := must(t, "stat", func() (os.FileInfo, error) { return os.Stat(path(m, "a.bin")) })
	if st.Size() != int64(len(data)) {
		t.Errorf("stat of a pending file: size %d, want %d", st.Size(), len(data))
	}
	got := must(t, "read", func() ([]byte, error) { return os.ReadFile(path(m, "a.bin")) })
	if !bytes.Equal(got, data) {
		t.Errorf("read of a pending file: %d bytes, differs from the %d written", len(got), len(data))
	}
	names := must(t, "readdir", func() ([]os.DirEntry, error) { return os.ReadDir(m.dir) })
	if len(names) != 1 || names[0].Name() != "a.bin" {
		t.Errorf("listing of a pending file: %v, want [a.bin]", names)
	}
	if s := m.fsys.Stats(); s.PendingUploads != 1 || s.PendingUploadBytes != int64(len(data)) {
		t.Errorf("pending uploads %d of %d bytes, want 1 of %d", s.PendingUploads, s.PendingUploadBytes, len(data))
	}
	store.open()
	waitUntil(t, "the upload", func() bool { return objectThere(t, minio, "a.bin") })
	wantObject(t, minio, "a.bin", data)
	waitUntil(t, "the pending count to drop", func() bool { return m.fsys.Stats().PendingUploads == 0 })

	t.Run("sync control", func(t *testing.T) {
		sm := mountStore(t, store, mountSpec{})
		writeFile(t, path(sm, "s.bin"), data, os.O_CREATE|os.O_WRONLY|os.O_TRUNC)
		wantObject(t, minio, "s.bin", data)
	})
}

// TestAsyncUploadFsync: fsync waits until the object is in the bucket.
func TestAsyncUploadFsync(t *testing.T) {
	minio := newMinIOStore(t, nil)
	store := newGateStore(minio)
	m := mountStore(t, store, mountSpec{cfg: asyncCfg})
	f := must(t, "create", func() (*os.File, error) { return os.Create(path(m, "f")) })
	defer func() { _ = f.Close() }()
	must(t, "write", func() (int, error) { return f.Write([]byte("synced")) })
	store.hold()
	synced := make(chan error, 1)
	go func() { synced <- f.Sync() }()
	waitUntil(t, "the PUT of the fsync", func() bool { return store.inFlight.Load() == 1 })
	select {
	case err := <-synced:
		t.Fatalf("fsync returned (%v) while its PUT was held", err)
	default:
	}
	store.open()
	if err := <-synced; err != nil {
		t.Fatalf("fsync: %v", err)
	}
	wantObject(t, minio, "f", []byte("synced"))

	// A close acknowledged, then fsync of the file opened again.
	store.hold()
	writeFile(t, path(m, "g"), []byte("later"), os.O_CREATE|os.O_WRONLY|os.O_TRUNC)
	wantNoObject(t, minio, "g")
	go func() {
		for store.inFlight.Load() == 0 {
			time.Sleep(20 * time.Millisecond)
		}
		store.open() // the worker's PUT is held: the fsync below waits for it
	}()
	must(t, "fsync of a pending file", func() (struct{}, error) {
		g, err := os.Open(path(m, "g"))
		if err != nil {
			return struct{}{}, err
		}
		defer func() { _ = g.Close() }()
		return struct{}{}, g.Sync()
	})
	wantObject(t, minio, "g", []byte("later"))
}

// TestAsyncUploadBoundsRenameUnlink: with every PUT held, at most
// asyncUploadWorkers are in flight; the rest wait in the queue. A queued
// file unlinked is never uploaded; a pending file renamed ends as the
// object of the new name only. Once the store answers, every other file
// is in the bucket byte for byte.
func TestAsyncUploadBoundsRenameUnlink(t *testing.T) {
	minio := newMinIOStore(t, nil)
	store := newGateStore(minio)
	m := mountStore(t, store, mountSpec{cfg: asyncCfg})
	const files = asyncUploadWorkers + 4
	store.hold()
	content := map[string][]byte{}
	for i := range files {
		name := fmt.Sprintf("f%02d", i)
		content[name] = randomBytes(1000+i, byte(i))
		writeFile(t, path(m, name), content[name], os.O_CREATE|os.O_WRONLY|os.O_TRUNC)
	}
	waitUntil(t, "the workers' PUTs", func() bool { return store.inFlight.Load() == asyncUploadWorkers })
	if got := m.fsys.Stats().PendingUploads; got != files {
		t.Errorf("pending uploads %d, want %d", got, files)
	}
	// The last files are queued behind the held PUTs.
	last := fmt.Sprintf("f%02d", files-1)
	must(t, "unlink a queued file", func() (struct{}, error) { return struct{}{}, os.Remove(path(m, last)) })
	delete(content, last)
	renamed := fmt.Sprintf("f%02d", files-2)
	done := make(chan error, 1)
	go func() { done <- os.Rename(path(m, renamed), path(m, "ckpt")) }()
	store.open()
	if err := <-done; err != nil {
		t.Fatalf("rename of a pending file: %v", err)
	}
	content["ckpt"] = content[renamed]
	delete(content, renamed)
	waitUntil(t, "the uploads", func() bool { return m.fsys.Stats().PendingUploads == 0 })
	for name, data := range content {
		wantObject(t, minio, name, data)
	}
	wantNoObject(t, minio, last)
	wantNoObject(t, minio, renamed)
	if n := store.puts(last); n != 0 {
		t.Errorf("the unlinked file was put %d times", n)
	}
	if got := store.maxInFlight.Load(); got > asyncUploadWorkers+1 {
		// The workers, and the rename's own upload at most.
		t.Errorf("%d PUTs in flight at once, want at most %d", got, asyncUploadWorkers+1)
	}
	got := must(t, "read renamed", func() ([]byte, error) { return os.ReadFile(path(m, "ckpt")) })
	if !bytes.Equal(got, content["ckpt"]) {
		t.Error("the renamed file reads differently")
	}
}

// TestAsyncUploadStoreDown: background uploads that fail are counted and
// retried; the file is uploaded once the store answers again.
func TestAsyncUploadStoreDown(t *testing.T) {
	minio := newMinIOStore(t, nil)
	store := newGateStore(minio)
	m := mountStore(t, store, mountSpec{cfg: asyncCfg})
	store.setDown(true)
	writeFile(t, path(m, "d"), []byte("after the outage"), os.O_CREATE|os.O_WRONLY|os.O_TRUNC)
	waitUntil(t, "two failed attempts", func() bool { return m.fsys.Stats().UploadFailures >= 2 })
	wantNoObject(t, minio, "d")
	if got := m.fsys.Stats().PendingUploads; got != 1 {
		t.Errorf("pending uploads %d while the store is down, want 1", got)
	}
	// The cache's usage file carries them to VolumeCache (pkg/cachestatus).
	waitUntil(t, "the usage file to show the failures", func() bool {
		u, err := cacheusage.Read(m.cache.(cacheAdapter).Dir())
		return err == nil && u.PendingUploads == 1 && u.PendingUploadBytes == int64(len("after the outage")) && u.UploadFailures >= 2
	})
	store.setDown(false)
	waitUntil(t, "the upload", func() bool { return objectThere(t, minio, "d") })
	wantObject(t, minio, "d", []byte("after the outage"))
	waitUntil(t, "the usage file to show nothing pending", func() bool {
		u, err := cacheusage.Read(m.cache.(cacheAdapter).Dir())
		return err == nil && u.PendingUploads == 0 && u.PendingUploadBytes == 0
	})
}

// TestAsyncUploadUnmountWaits: an unmount with uploads pending returns
// once every acknowledged file is in the bucket.
func TestAsyncUploadUnmountWaits(t *testing.T) {
	minio := newMinIOStore(t, nil)
	store := newGateStore(minio)
	backend := newBackend(t, store, mountSpec{cfg: asyncCfg})
	fsys, err := newFS(asyncCfg, store, backend)
	if err != nil {
		t.Fatal(err)
	}
	m, unmount := mountFSUntil(t, fsys)
	store.hold()
	const files = 24
	for i := range files {
		writeFile(t, path(m, fmt.Sprintf("u%02d", i)), randomBytes(4096, byte(i)), os.O_CREATE|os.O_WRONLY|os.O_TRUNC)
	}
	if got := fsys.Stats().PendingUploads; got != files {
		t.Errorf("pending uploads %d before the unmount, want %d", got, files)
	}
	unmounted := make(chan struct{})
	go func() { unmount(); close(unmounted) }()
	// The uploads may go once the mount is gone: the unmount waits.
	waitUntil(t, "the mount to go", func() bool {
		var st syscall.Statfs_t
		return syscall.Statfs(m.dir, &st) == nil && st.Type != 0x65735546 // FUSE_SUPER_MAGIC
	})
	store.open()
	<-unmounted
	for i := range files {
		wantObject(t, minio, fmt.Sprintf("u%02d", i), randomBytes(4096, byte(i)))
	}
	if got := fsys.Stats().PendingUploads; got != 0 {
		t.Errorf("pending uploads %d after the unmount, want 0", got)
	}
}

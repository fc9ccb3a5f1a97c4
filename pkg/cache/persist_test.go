package cache

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	bolt "go.etcd.io/bbolt"

	"github.com/basin-csi/basin/pkg/objstore"
	"github.com/basin-csi/basin/pkg/objstore/objstoretest"
)

func TestReopenRoundTrip(t *testing.T) {
	dir := t.TempDir()
	fake := objstoretest.NewFake()
	c := openTest(t, dir, fake, testOpts())
	var infos []objstore.ObjectInfo
	var datas [][]byte
	for i, size := range []int{1, 100 * kib, 700 * kib, 64 * kib} {
		datas = append(datas, randBytes(uint64(500+i), size))
		infos = append(infos, put(t, fake, fmt.Sprintf("dir/f%d", i), datas[i]))
		readObject(t, c, infos[i])
	}
	// A partly cached object: only its second block.
	partial := randBytes(510, 400*kib)
	pinfo := put(t, fake, "partial", partial)
	h := openObj(t, c, pinfo)
	if _, err := h.ReadAt(context.Background(), make([]byte, 10), 70*kib); err != nil {
		t.Fatal(err)
	}
	_ = h.Close()
	paths := []string{"", "dir", "dir/f0", "dir/f1", "a/very/deep/path", "dir/f2"}
	inos, err := c.InodesOf(paths)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.List(context.Background(), "dir/"); err != nil {
		t.Fatal(err)
	}
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}

	c = openTest(t, dir, fake, testOpts())
	defer func() { _ = c.Close() }()
	fake.ResetCounters()
	for i := range infos {
		if got := readObject(t, c, infos[i]); !bytes.Equal(got, datas[i]) {
			t.Fatalf("f%d: wrong bytes after reopen", i)
		}
	}
	if n := fake.Calls(objstoretest.OpRead); n != 0 {
		t.Errorf("%d GETs for objects cached before reopen", n)
	}
	h = openObj(t, c, pinfo)
	if _, err := h.ReadAt(context.Background(), make([]byte, 10), 70*kib); err != nil {
		t.Fatal(err)
	}
	if n := fake.Calls(objstoretest.OpRead); n != 0 {
		t.Errorf("cached block of a partial object missed after reopen")
	}
	if got := readAll(t, h, 64*kib); !bytes.Equal(got, partial) {
		t.Fatal("partial object: wrong bytes")
	}
	_ = h.Close()
	for i, p := range paths {
		got, err := c.InodeOf(p)
		if err != nil || got != inos[i] {
			t.Errorf("InodeOf(%q) after reopen = %d, %v; want %d", p, got, err, inos[i])
		}
		if back, ok := c.PathOf(inos[i]); !ok || back != p {
			t.Errorf("PathOf(%d) = %q, %v; want %q", inos[i], back, ok, p)
		}
	}
	if inos[0] != 1 {
		t.Errorf("root inode %d, want 1", inos[0])
	}
	if fresh, _ := c.InodeOf("new/path"); fresh <= inos[len(inos)-1] {
		t.Errorf("new inode %d reuses a number (last %d)", fresh, inos[len(inos)-1])
	}
	if _, err := c.List(context.Background(), "dir/"); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Stat(context.Background(), "dir/f1"); err != nil {
		t.Fatal(err)
	}
	if n := fake.Calls(objstoretest.OpList) + fake.Calls(objstoretest.OpStat); n != 0 {
		t.Errorf("%d LIST/HEAD requests for metadata cached before reopen", n)
	}
	if _, err := c.Verify(context.Background()); err != nil {
		t.Error(err)
	}
}

func TestRecoveryAfterUncleanShutdown(t *testing.T) {
	dir := t.TempDir()
	fake := objstoretest.NewFake()
	data := randBytes(600, 300*kib)
	info := put(t, fake, "kept", data)
	gone := put(t, fake, "gone", randBytes(601, 100*kib))
	c := openTest(t, dir, fake, testOpts())
	readObject(t, c, info)
	readObject(t, c, gone)
	h := openObj(t, c, gone)
	gonePath := h.o.path
	_ = h.Close()
	mustFlush(t, c)
	// Simulate a crash: no Close, so no clean flag; the index stays as the
	// last flush left it. Release the locks as process exit would.
	c.cancel()
	close(c.stop)
	c.jobs.Wait()
	_ = c.ix.close()
	unlockDir(c.lock)

	// Damage: a record whose file vanished, an orphan, junk, a stale
	// staged file.
	if err := os.Remove(gonePath); err != nil {
		t.Fatal(err)
	}
	orphan := filepath.Join(dir, dataRel(objectID("x", "y", "z", 1)))
	if err := os.MkdirAll(filepath.Dir(orphan), 0o700); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{orphan, filepath.Join(dir, "data", "junk"), filepath.Join(dir, "staging", "old-upload")} {
		if err := os.WriteFile(p, []byte("x"), 0o600); err != nil {
			t.Fatal(err)
		}
	}

	c = openTest(t, dir, fake, testOpts())
	defer func() { _ = c.Close() }()
	if rep, err := c.Verify(context.Background()); err != nil {
		t.Fatalf("verify after recovery: %v %v", err, rep.Problems)
	}
	for _, p := range []string{orphan, filepath.Join(dir, "data", "junk"), filepath.Join(dir, "staging", "old-upload")} {
		if _, err := os.Stat(p); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("%s survived recovery", p)
		}
	}
	fake.ResetCounters()
	if got := readObject(t, c, info); !bytes.Equal(got, data) {
		t.Fatal("wrong bytes after recovery")
	}
	if n := fake.Calls(objstoretest.OpRead); n != 0 {
		t.Errorf("intact object missed after recovery: %d GETs", n)
	}
}

func TestOpenErrors(t *testing.T) {
	fake := objstoretest.NewFake()
	t.Run("locked", func(t *testing.T) {
		dir := t.TempDir()
		c := openTest(t, dir, fake, testOpts())
		defer func() { _ = c.Close() }()
		if _, err := Open(context.Background(), dir, fake, testOpts()); !errors.Is(err, ErrLocked) {
			t.Fatalf("second Open: %v, want ErrLocked", err)
		}
	})
	t.Run("schema too new", func(t *testing.T) {
		dir := t.TempDir()
		c := openTest(t, dir, fake, testOpts())
		if err := c.Close(); err != nil {
			t.Fatal(err)
		}
		db, err := bolt.Open(filepath.Join(dir, indexFileName), 0o600, nil)
		if err != nil {
			t.Fatal(err)
		}
		if err := db.Update(func(tx *bolt.Tx) error { return putMetaU64(tx, metaSchema, schemaVersion+1) }); err != nil {
			t.Fatal(err)
		}
		_ = db.Close()
		if _, err := Open(context.Background(), dir, fake, testOpts()); !errors.Is(err, ErrSchemaTooNew) {
			t.Fatalf("Open: %v, want ErrSchemaTooNew", err)
		}
	})
	for _, tt := range []struct {
		name string
		mod  func(*Options)
	}{
		{"block size not 4K multiple", func(o *Options) { o.CacheBlockSize = 5000 }},
		{"watermarks inverted", func(o *Options) { o.HighWatermark, o.LowWatermark = 0.5, 0.9 }},
		{"negative capacity", func(o *Options) { o.CacheSize = -1 }},
		{"tiny part", func(o *Options) { o.PartSize = 1 }},
	} {
		t.Run(tt.name, func(t *testing.T) {
			o := testOpts()
			tt.mod(&o)
			if _, err := Open(context.Background(), t.TempDir(), fake, o); !errors.Is(err, ErrInvalidOptions) {
				t.Fatalf("Open: %v, want ErrInvalidOptions", err)
			}
		})
	}
	t.Run("nil store", func(t *testing.T) {
		if _, err := Open(context.Background(), t.TempDir(), nil, testOpts()); !errors.Is(err, ErrInvalidArgument) {
			t.Fatalf("Open: %v, want ErrInvalidArgument", err)
		}
	})
}

func TestLayoutPermissions(t *testing.T) {
	c, fake, dir := newFixture(t, testOpts())
	readObject(t, c, put(t, fake, "../../etc/passwd", randBytes(1, 10)))
	mustFlush(t, c)
	err := filepath.Walk(dir, func(p string, fi os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		want := os.FileMode(0o600)
		if fi.IsDir() {
			want = 0o700
		}
		if fi.Mode().Perm() != want {
			t.Errorf("%s: mode %v, want %v", p, fi.Mode().Perm(), want)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

func TestOriginChangeDropsData(t *testing.T) {
	dir := t.TempDir()
	fake := objstoretest.NewFake()
	info := put(t, fake, "k", randBytes(700, 50*kib))
	c := openTest(t, dir, fake, testOpts())
	readObject(t, c, info)
	ino, _ := c.InodeOf("k")
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	o := testOpts()
	o.Origin = "fake://other-bucket/"
	c = openTest(t, dir, fake, o)
	defer func() { _ = c.Close() }()
	if st := c.Stats(); st.Objects != 0 || st.UsedBytes != 0 {
		t.Errorf("data of another origin survived: %+v", st)
	}
	if got, _ := c.InodeOf("k"); got != ino {
		t.Errorf("inode changed with the origin: %d → %d", ino, got)
	}
	if _, err := c.Verify(context.Background()); err != nil {
		t.Error(err)
	}
}

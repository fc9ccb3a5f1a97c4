package fuse

import (
	"bytes"
	"context"
	"github.com/basin-csi/basin/pkg/mountspec"
	"os"
	"syscall"
	"testing"
	"time"

	"github.com/basin-csi/basin/internal/mountdefaults"
	"github.com/basin-csi/basin/internal/testserver"
	"github.com/basin-csi/basin/pkg/cache"
	"github.com/basin-csi/basin/pkg/objstore/objstoretest"
)

// TestRemountWarmCache mounts, reads, unmounts and mounts again on the same
// cache directory: inode numbers are the same, and within the TTL the
// second mount lists and reads without a request to the bucket.
func TestRemountWarmCache(t *testing.T) {
	for _, cfg := range []Config{{}, {Spec: mountspec.Spec{ReadOnly: true, OpenMode: mountdefaults.OpenKernel}}} {
		t.Run(string(cfg.withDefaults().OpenMode), func(t *testing.T) { testRemountWarmCache(t, cfg) })
	}
}

func testRemountWarmCache(t *testing.T, cfg Config) {
	testserver.RequireFUSE(t)
	store := objstoretest.NewFake()
	data := randomBytes(3<<20+11, 5)
	put(t, store, "sub/a.bin", data)
	put(t, store, "sub/b.txt", []byte("b"))
	put(t, store, "top", []byte("t"))
	cacheDir := t.TempDir()
	cfg.MetadataTTL, cfg.NegativeMetadataTTL = time.Hour, time.Hour
	opts := cache.Options{Spec: cfg.Spec, VolumeID: "remount", Origin: "fake://remount"}

	type observed struct {
		inos  map[string]uint64
		names []string
	}
	session := func() observed {
		c, err := cache.Open(context.Background(), cacheDir, store, opts)
		if err != nil {
			t.Fatal(err)
		}
		defer func() { _ = c.Close() }()
		fsys, err := newFS(cfg, store, cacheAdapter{c})
		if err != nil {
			t.Fatal(err)
		}
		dir := t.TempDir()
		m, err := fsys.Mount(t.Context(), dir, MountOptions{})
		if err != nil {
			t.Fatal(err)
		}
		var st syscall.Stat_t
		_ = syscall.Stat(dir, &st)
		defer unmountOrAbort(t, m, dir, st.Dev)
		tm := &testMount{dir: dir}
		var o observed
		o.inos = map[string]uint64{}
		for _, d := range []string{"", "sub"} {
			for _, e := range must(t, "readdir", func() ([]os.DirEntry, error) { return os.ReadDir(path(tm, d)) }) {
				o.names = append(o.names, d+"/"+e.Name())
			}
		}
		for _, p := range []string{"sub", "sub/a.bin", "sub/b.txt", "top"} {
			var st syscall.Stat_t
			must(t, "stat", func() (struct{}, error) { return struct{}{}, syscall.Stat(path(tm, p), &st) })
			o.inos[p] = st.Ino
		}
		got := must(t, "read", func() ([]byte, error) { return os.ReadFile(path(tm, "sub/a.bin")) })
		if !bytes.Equal(got, data) {
			t.Error("content differs")
		}
		return o
	}

	first := session()
	store.ResetCounters()
	second := session()
	for p, ino := range first.inos {
		if second.inos[p] != ino {
			t.Errorf("%s: inode %d after remount, was %d", p, second.inos[p], ino)
		}
	}
	if len(second.names) != 4 {
		t.Errorf("second mount listed %v", second.names)
	}
	for _, op := range []objstoretest.Op{objstoretest.OpList, objstoretest.OpStat, objstoretest.OpRead} {
		if n := store.Calls(op); n != 0 {
			t.Errorf("warm remount made %d %s requests, want 0", n, op)
		}
	}
}

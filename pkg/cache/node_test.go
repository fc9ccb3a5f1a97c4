package cache

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/basin-csi/basin/pkg/objstore/objstoretest"
)

func TestNodeBudget(t *testing.T) {
	root := t.TempDir()
	node, err := NewNode(root)
	if err != nil {
		t.Fatal(err)
	}
	fake := objstoretest.NewFake()
	clock := newFakeClock()
	// Three volumes of 512 KiB each: "old" idle and least recently used,
	// "newer" idle, "busy" open in this process.
	fill := func(id string) *Cache {
		dir, err := node.VolumeDir(id)
		if err != nil {
			t.Fatal(err)
		}
		opts := testOpts()
		opts.VolumeID, opts.Origin, opts.Now = id, "fake://"+id, clock.Now
		c := openTest(t, dir, fake, opts)
		for i := 0; i < 8; i++ {
			readObject(t, c, put(t, fake, fmt.Sprintf("%s/%d", id, i), randBytes(uint64(len(id)*100+i), 64*kib)))
		}
		return c
	}
	for _, id := range []string{"old", "newer"} {
		if err := fill(id).Close(); err != nil {
			t.Fatal(err)
		}
	}
	busy := fill("busy")
	defer func() { _ = busy.Close() }()
	mustFlush(t, busy)

	vols, err := node.Volumes(context.Background())
	if err != nil || len(vols) != 3 {
		t.Fatalf("Volumes = %+v, %v", vols, err)
	}
	var total int64
	for _, v := range vols {
		total += v.UsedBytes
		if v.UsedBytes < 512*kib {
			t.Errorf("%s: used %d, want >= 512 KiB", v.VolumeID, v.UsedBytes)
		}
		if v.InUse != (v.VolumeID == "busy") {
			t.Errorf("%s: InUse %v", v.VolumeID, v.InUse)
		}
	}
	// A budget that needs all of "old" and half of "newer".
	budget := total - 768*kib
	res, err := node.Enforce(context.Background(), budget)
	if err != nil {
		t.Fatal(err)
	}
	if res.After > budget || res.Before != total {
		t.Errorf("Enforce: %+v, budget %d", res, budget)
	}
	after := map[string]int64{}
	vols, _ = node.Volumes(context.Background())
	for _, v := range vols {
		after[v.VolumeID] = v.UsedBytes
	}
	if after["old"] != 0 || after["newer"] == 0 || after["newer"] > 320*kib || after["busy"] < 512*kib {
		t.Errorf("usage after Enforce: %v (want old emptied, newer shrunk, busy untouched)", after)
	}
	// Removing needs the volume idle.
	if err := node.Remove(context.Background(), "busy"); !errors.Is(err, ErrLocked) {
		t.Errorf("Remove(busy): %v, want ErrLocked", err)
	}
	if err := node.Remove(context.Background(), "old"); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(root, "old")); !errors.Is(err, os.ErrNotExist) {
		t.Error("removed volume directory still exists")
	}
	// The shrunk idle volume still opens, verifies and keeps its origin.
	dir, _ := node.VolumeDir("newer")
	opts := testOpts()
	opts.VolumeID, opts.Origin = "newer", "fake://newer"
	c := openTest(t, dir, fake, opts)
	defer func() { _ = c.Close() }()
	if st := c.Stats(); st.Objects == 0 || st.Objects == 8 {
		t.Errorf("newer after Enforce: %d objects, want some but not all", st.Objects)
	}
	if _, err := c.Verify(context.Background()); err != nil {
		t.Error(err)
	}
}

func TestVolumeDirValidation(t *testing.T) {
	node, err := NewNode(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{"", ".", "..", "a/b", "a\x00", string(make([]byte, 300))} {
		if _, err := node.VolumeDir(id); !errors.Is(err, ErrInvalidArgument) {
			t.Errorf("VolumeDir(%q): %v, want ErrInvalidArgument", id, err)
		}
	}
	if d, err := node.VolumeDir("pvc-123"); err != nil || filepath.Base(d) != "pvc-123" {
		t.Errorf("VolumeDir(pvc-123) = %q, %v", d, err)
	}
}

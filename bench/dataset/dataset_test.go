package dataset

import (
	"bytes"
	"context"
	"errors"
	"image/jpeg"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/basin-csi/basin/pkg/objstore"
	"github.com/basin-csi/basin/pkg/objstore/objstoretest"
)

func TestValidate(t *testing.T) {
	tests := []struct {
		name string
		set  Set
		ok   bool
	}{
		{"small", Small(20000, 128<<10, 100), true},
		{"checkpoint", Checkpoint(4, 1<<30), true},
		{"tree", Tree(100000, 10, 3), true},
		{"no dirs", Small(10, 1, 0), false},
		{"no files", Checkpoint(0, 1), false},
		{"negative size", Checkpoint(1, -1), false},
		{"zero fanout", Tree(10, 0, 3), false},
		{"overflowing tree", Tree(10, 1000, 9), false},
		{"slash in name", Set{Name: "a/b", Layout: LayoutFlat, Files: 1}, false},
		{"reserved name", Set{Name: "_bench", Layout: LayoutFlat, Files: 1}, false},
		{"unknown layout", Set{Name: "x", Layout: "zigzag", Files: 1}, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.set.Validate()
			if tc.ok != (err == nil) || err != nil && !errors.Is(err, ErrInvalidSet) {
				t.Fatalf("Validate() = %v, want ok=%v", err, tc.ok)
			}
		})
	}
}

func TestKeys(t *testing.T) {
	tests := []struct {
		name      string
		set       Set
		dirs      int
		first     string
		wantDepth int // slashes in a key
	}{
		{"small", Small(40, 1, 8), 8, "small/d000/f000000.bin", 2},
		{"checkpoint", Checkpoint(3, 1), 1, "checkpoint/shard-000.bin", 1},
		{"tree", Tree(100, 3, 2), 9, "tree/l0-00/l1-00/e0000000", 3},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			keys := tc.set.Keys()
			if keys[0] != tc.first {
				t.Errorf("first key %q, want %q", keys[0], tc.first)
			}
			seen := map[string]bool{}
			dirs := map[string]bool{}
			for _, k := range keys {
				if seen[k] {
					t.Fatalf("duplicate key %q", k)
				}
				seen[k] = true
				dirs[k[:strings.LastIndex(k, "/")]] = true
				if !strings.HasPrefix(k, tc.set.Prefix()) || strings.Count(k, "/") != tc.wantDepth {
					t.Errorf("key %q: wrong prefix or depth", k)
				}
			}
			if len(dirs) != tc.dirs {
				t.Errorf("%d directories, want %d", len(dirs), tc.dirs)
			}
		})
	}
}

func TestContentDeterministic(t *testing.T) {
	s := Small(2, 100_000, 1)
	a, _ := io.ReadAll(s.Content(s.Key(0), s.FileSize))
	b, _ := io.ReadAll(s.Content(s.Key(0), s.FileSize))
	c, _ := io.ReadAll(s.Content(s.Key(1), s.FileSize))
	if len(a) != 100_000 || !bytes.Equal(a, b) {
		t.Fatalf("same key gave different or short content (%d bytes)", len(a))
	}
	if bytes.Equal(a, c) {
		t.Fatal("different keys gave the same content")
	}
	s2 := s
	s2.Seed++
	if d, _ := io.ReadAll(s2.Content(s.Key(0), s.FileSize)); bytes.Equal(a, d) {
		t.Fatal("different seeds gave the same content")
	}
}

func TestVerify(t *testing.T) {
	s := Small(1, 300_000, 1)
	key := s.Key(0)
	good, _ := io.ReadAll(s.Content(key, s.FileSize))
	flipped := bytes.Clone(good)
	flipped[299_999] ^= 1
	tests := []struct {
		name string
		data []byte
		ok   bool
	}{
		{"exact", good, true},
		{"flipped last byte", flipped, false},
		{"short", good[:299_000], false},
		{"long", append(bytes.Clone(good), 0), false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := s.Verify(key, bytes.NewReader(tc.data))
			if tc.ok != (err == nil) || err != nil && !errors.Is(err, ErrMismatch) {
				t.Fatalf("Verify = %v, want ok=%v", err, tc.ok)
			}
		})
	}
}

func TestWriteDir(t *testing.T) {
	ctx := context.Background()
	root := t.TempDir()
	sink := DirSink{Root: root}
	set := Small(30, 5000, 4)
	var last int
	wrote, err := Write(ctx, sink, set, 4, func(_ Set, done int) { last = done })
	if err != nil || !wrote {
		t.Fatalf("Write = %v, %v", wrote, err)
	}
	if last != 30 {
		t.Errorf("progress ended at %d, want 30", last)
	}
	for _, k := range set.Keys() {
		f, err := os.Open(filepath.Join(root, k))
		if err != nil {
			t.Fatal(err)
		}
		if err := set.Verify(k, f); err != nil {
			t.Error(err)
		}
		_ = f.Close()
	}
	if wrote, err := Write(ctx, sink, set, 4, nil); err != nil || wrote {
		t.Fatalf("second Write = %v, %v; want skipped", wrote, err)
	}
	smaller := set
	smaller.Files = 12
	if wrote, err := Write(ctx, sink, smaller, 4, nil); err != nil || !wrote {
		t.Fatalf("Write of a changed set = %v, %v; want written", wrote, err)
	}
	var files int
	err = filepath.WalkDir(filepath.Join(root, set.Name), func(_ string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			files++
		}
		return err
	})
	if err != nil || files != 12 {
		t.Fatalf("%d files after rewriting a smaller set (%v), want 12: the old ones must go", files, err)
	}
	if err := (DirSink{Root: root}).Put(ctx, "../escape", 0, bytes.NewReader(nil)); err == nil {
		t.Fatal("a key escaping the root was accepted")
	}
}

func TestWriteStore(t *testing.T) {
	ctx := context.Background()
	fake := objstoretest.NewFake()
	sink := StoreSink{Store: fake, Name: "fake"}
	set := Tree(50, 2, 3)
	if wrote, err := Write(ctx, sink, set, 8, nil); err != nil || !wrote {
		t.Fatalf("Write = %v, %v", wrote, err)
	}
	if got := len(fake.Keys()); got != 51 {
		t.Fatalf("%d keys in the bucket, want 50 objects + marker", got)
	}
	fewer := set
	fewer.Files = 10
	if wrote, err := Write(ctx, sink, fewer, 8, nil); err != nil || !wrote {
		t.Fatalf("Write of a changed set = %v, %v", wrote, err)
	}
	if got := len(fake.Keys()); got != 11 {
		t.Fatalf("%d keys after rewriting a smaller set, want 10 objects + marker", got)
	}
	info, err := fake.Stat(ctx, set.Key(9))
	if err != nil || info.Size != 0 {
		t.Fatalf("Stat = %+v, %v", info, err)
	}
	if !Present(ctx, sink, fewer) {
		t.Fatal("set not Present after Write")
	}
}

func TestWriteStopsOnError(t *testing.T) {
	fake := objstoretest.NewFake()
	fake.SetError(objstoretest.OpPut, objstore.ErrAccessDenied)
	_, err := Write(context.Background(), StoreSink{Store: fake}, Small(100, 10, 2), 4, nil)
	if !errors.Is(err, objstore.ErrAccessDenied) {
		t.Fatalf("err = %v, want ErrAccessDenied", err)
	}
	if n := fake.Calls(objstoretest.OpPut); n > 8 {
		t.Errorf("%d puts after the first failure, want the workers to stop", n)
	}
}

func BenchmarkContent(b *testing.B) {
	s := Checkpoint(1, 1<<20)
	buf := make([]byte, 1<<20)
	b.SetBytes(s.FileSize)
	for b.Loop() {
		if _, err := io.ReadFull(s.Content(s.Key(0), s.FileSize), buf); err != nil {
			b.Fatal(err)
		}
	}
}

// TestContentChunking reads the same object with odd buffer sizes: the
// bytes must not depend on how the reader is called.
func TestContentChunking(t *testing.T) {
	s := Checkpoint(1, 10_007)
	whole, _ := io.ReadAll(s.Content("k", s.FileSize))
	for _, n := range []int{1, 3, 7, 8, 9, 4096} {
		r := s.Content("k", s.FileSize)
		var got []byte
		buf := make([]byte, n)
		for {
			m, err := r.Read(buf)
			got = append(got, buf[:m]...)
			if err == io.EOF {
				break
			}
		}
		if !bytes.Equal(got, whole) {
			t.Errorf("reads of %d bytes gave different content", n)
		}
	}
}

// TestImages: the images set is an ImageFolder of valid JPEGs whose sizes
// and dimensions vary, the same for every run.
func TestImages(t *testing.T) {
	set := Images(20, 4)
	if err := set.Validate(); err != nil {
		t.Fatal(err)
	}
	if k := set.Key(5); k != "images/c001/i000005.jpg" {
		t.Errorf("key 5 = %q", k)
	}
	sizes := map[int]bool{}
	widths := map[int]bool{}
	for _, k := range set.Keys()[:8] {
		body, size, err := set.Object(k)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(body)
		if int64(len(b)) != size {
			t.Fatalf("%s: %d bytes, size says %d", k, len(b), size)
		}
		cfg, err := jpeg.DecodeConfig(bytes.NewReader(b))
		if err != nil {
			t.Fatalf("%s: not a JPEG: %v", k, err)
		}
		again, _ := set.JPEG(k)
		if !bytes.Equal(again, b) {
			t.Fatalf("%s: not deterministic", k)
		}
		sizes[len(b)], widths[cfg.Width] = true, true
	}
	if len(sizes) < 6 || len(widths) < 6 {
		t.Errorf("%d distinct sizes, %d widths in 8 images: want them varied", len(sizes), len(widths))
	}
}

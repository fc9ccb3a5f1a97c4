package ociimage

import (
	"archive/tar"
	"io"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/v1/tarball"
)

func testSpec(t *testing.T) Spec {
	dir := t.TempDir()
	bin := filepath.Join(dir, "tool")
	if err := os.WriteFile(bin, []byte("#!binary"), 0o644); err != nil {
		t.Fatal(err)
	}
	return Spec{
		Tag:        "example.test/basin:v1",
		Files:      []File{{Source: bin, Path: "/usr/local/bin/tool", Mode: 0o755}},
		Symlinks:   []Symlink{{Path: "/bin/sh", Target: "/usr/local/bin/tool"}},
		Entrypoint: []string{"/usr/local/bin/tool"},
		Labels:     map[string]string{"org.opencontainers.image.version": "v1"},
	}
}

// TestWriteIsReproducible: two builds of the same spec, with the input
// file touched in between, give the same digest; another content does not.
func TestWriteIsReproducible(t *testing.T) {
	spec := testSpec(t)
	out := t.TempDir()
	d1, err := Write(spec, filepath.Join(out, "a.tar"))
	if err != nil {
		t.Fatal(err)
	}
	later := time.Now().Add(time.Hour)
	if err := os.Chtimes(spec.Files[0].Source, later, later); err != nil {
		t.Fatal(err)
	}
	d2, err := Write(spec, filepath.Join(out, "b.tar"))
	if err != nil {
		t.Fatal(err)
	}
	if d1 != d2 {
		t.Fatalf("digests differ: %s, %s", d1, d2)
	}
	if err := os.WriteFile(spec.Files[0].Source, []byte("#!other"), 0o644); err != nil {
		t.Fatal(err)
	}
	d3, err := Write(spec, filepath.Join(out, "c.tar"))
	if err != nil {
		t.Fatal(err)
	}
	if d3 == d1 {
		t.Fatal("another content gave the same digest")
	}
}

// TestImageContents reads the tarball back: tag, entrypoint and the
// layer's files with their modes.
func TestImageContents(t *testing.T) {
	spec := testSpec(t)
	out := filepath.Join(t.TempDir(), "img.tar")
	if _, err := Write(spec, out); err != nil {
		t.Fatal(err)
	}
	img, err := tarball.ImageFromPath(out, nil)
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := img.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	if len(cfg.Config.Entrypoint) != 1 || cfg.Config.Entrypoint[0] != "/usr/local/bin/tool" || cfg.OS != "linux" {
		t.Fatalf("config = %+v", cfg.Config)
	}
	layers, err := img.Layers()
	if err != nil || len(layers) != 1 {
		t.Fatalf("layers = %d, %v", len(layers), err)
	}
	rc, err := layers[0].Uncompressed()
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = rc.Close() }()
	got := map[string]*tar.Header{}
	tr := tar.NewReader(rc)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		got[h.Name] = h
	}
	if h := got["usr/local/bin/tool"]; h == nil || h.Mode != 0o755 || h.Size != int64(len("#!binary")) || h.Uid != 0 {
		t.Fatalf("tool entry = %+v", h)
	}
	if h := got["bin/sh"]; h == nil || h.Typeflag != tar.TypeSymlink || h.Linkname != "/usr/local/bin/tool" {
		t.Fatalf("sh entry = %+v", h)
	}
	for _, d := range []string{"usr/", "usr/local/", "usr/local/bin/", "bin/"} {
		if h := got[d]; h == nil || h.Typeflag != tar.TypeDir {
			t.Fatalf("directory %s missing", d)
		}
	}
}

func TestRejectsRelativePaths(t *testing.T) {
	spec := testSpec(t)
	spec.Files[0].Path = "usr/bin/tool"
	if _, err := Build(spec); err == nil {
		t.Fatal("a relative path in the image was accepted")
	}
}

func TestRejectsAPathGivenTwice(t *testing.T) {
	spec := testSpec(t)
	spec.Symlinks = append(spec.Symlinks, Symlink{Path: "/usr/local/bin/tool", Target: "/bin/sh"})
	if _, err := Build(spec); err == nil {
		t.Fatal("a symlink over a file of the same path was accepted")
	}
}

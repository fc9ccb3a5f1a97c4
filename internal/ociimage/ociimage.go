// Package ociimage writes single-layer container images as image
// tarballs (the format `ctr images import` and `docker load` read),
// without a container engine.
//
// Contract: the same Spec and the same input files give the same image
// digest, byte for byte: every file, directory and symlink is written
// in path order with owner 0:0, the modification time of Spec.Time, and
// the mode the spec names; the image's creation time is Spec.Time too.
package ociimage

import (
	"archive/tar"
	"bytes"
	"fmt"
	"io"
	"os"
	"path"
	"runtime"
	"sort"
	"strings"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"

	"github.com/basin-csi/basin/internal/atomicfile"
)

// File is one regular file of the image.
type File struct {
	Source string      // path on this machine
	Path   string      // absolute path in the image
	Mode   os.FileMode // permission bits
}

// Symlink is one symbolic link of the image.
type Symlink struct {
	Path   string // absolute path in the image
	Target string
}

// Spec describes an image.
type Spec struct {
	Tag        string // e.g. ghcr.io/basin-csi/basin:v0.1.0
	Files      []File
	Symlinks   []Symlink
	Entrypoint []string
	Env        []string
	Labels     map[string]string
	// Time is every entry's modification time and the image's creation
	// time; the zero value stands for the Unix epoch.
	Time time.Time
}

// Write writes the image of spec as an image tarball to out and returns
// its digest.
func Write(spec Spec, out string) (v1.Hash, error) {
	img, err := Build(spec)
	if err != nil {
		return v1.Hash{}, err
	}
	tag, err := name.NewTag(spec.Tag)
	if err != nil {
		return v1.Hash{}, fmt.Errorf("ociimage: tag %q: %w", spec.Tag, err)
	}
	// Not fsynced: a build output, written again by the next build.
	if err := atomicfile.Write(out, 0o644, atomicfile.NoSync, func(w io.Writer) error {
		return tarball.Write(tag, img, w)
	}); err != nil {
		return v1.Hash{}, fmt.Errorf("ociimage: %w", err)
	}
	return img.Digest()
}

// Build returns the image of spec.
func Build(spec Spec) (v1.Image, error) {
	when := spec.Time
	if when.IsZero() {
		when = time.Unix(0, 0)
	}
	when = when.UTC()
	layerTar, err := layerBytes(spec, when)
	if err != nil {
		return nil, err
	}
	layer, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) {
		return io.NopCloser(bytes.NewReader(layerTar)), nil
	})
	if err != nil {
		return nil, fmt.Errorf("ociimage: layer: %w", err)
	}
	img, err := mutate.Append(empty.Image, mutate.Addendum{Layer: layer, History: v1.History{
		Created: v1.Time{Time: when}, CreatedBy: "basin ociimage",
	}})
	if err != nil {
		return nil, fmt.Errorf("ociimage: %w", err)
	}
	cfg, err := img.ConfigFile()
	if err != nil {
		return nil, err
	}
	cfg = cfg.DeepCopy()
	cfg.Architecture, cfg.OS = runtime.GOARCH, "linux" // the binaries are built for this machine
	cfg.Created = v1.Time{Time: when}
	cfg.Config.Entrypoint = spec.Entrypoint
	cfg.Config.Env = spec.Env
	cfg.Config.Labels = spec.Labels
	return mutate.ConfigFile(img, cfg)
}

// entry is one tar entry before sorting.
type entry struct {
	hdr  tar.Header
	from string // regular files: where the content comes from
}

// layerBytes is the layer's uncompressed tar: parent directories first,
// then every entry in path order.
func layerBytes(spec Spec, when time.Time) ([]byte, error) {
	entries := map[string]entry{}
	addDirs := func(p string) {
		for d := path.Dir(p); d != "/"; d = path.Dir(d) {
			name := strings.TrimPrefix(d, "/") + "/"
			entries[name] = entry{hdr: tar.Header{Typeflag: tar.TypeDir, Name: name, Mode: 0o755}}
		}
	}
	for _, f := range spec.Files {
		if !path.IsAbs(f.Path) {
			return nil, fmt.Errorf("ociimage: %s: want an absolute path in the image", f.Path)
		}
		st, err := os.Stat(f.Source)
		if err != nil {
			return nil, fmt.Errorf("ociimage: %w", err)
		}
		if !st.Mode().IsRegular() {
			return nil, fmt.Errorf("ociimage: %s is not a regular file", f.Source)
		}
		addDirs(f.Path)
		n := strings.TrimPrefix(path.Clean(f.Path), "/")
		if _, dup := entries[n]; dup {
			return nil, fmt.Errorf("ociimage: %s given twice", f.Path)
		}
		entries[n] = entry{hdr: tar.Header{Typeflag: tar.TypeReg, Name: n, Mode: int64(f.Mode.Perm()), Size: st.Size()}, from: f.Source}
	}
	for _, l := range spec.Symlinks {
		if !path.IsAbs(l.Path) {
			return nil, fmt.Errorf("ociimage: %s: want an absolute path in the image", l.Path)
		}
		addDirs(l.Path)
		n := strings.TrimPrefix(path.Clean(l.Path), "/")
		if _, dup := entries[n]; dup {
			return nil, fmt.Errorf("ociimage: %s given twice", l.Path)
		}
		entries[n] = entry{hdr: tar.Header{Typeflag: tar.TypeSymlink, Name: n, Linkname: l.Target, Mode: 0o777}}
	}
	names := make([]string, 0, len(entries))
	for n := range entries {
		names = append(names, n)
	}
	sort.Strings(names)
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, n := range names {
		e := entries[n]
		e.hdr.ModTime, e.hdr.Format = when, tar.FormatPAX
		if err := tw.WriteHeader(&e.hdr); err != nil {
			return nil, err
		}
		if e.from == "" {
			continue
		}
		if err := copyFile(tw, e.from, e.hdr.Size); err != nil {
			return nil, err
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// copyFile copies exactly size bytes of src into w.
func copyFile(w io.Writer, src string, size int64) error {
	f, err := os.Open(src)
	if err != nil {
		return fmt.Errorf("ociimage: %w", err)
	}
	defer func() { _ = f.Close() }()
	if _, err := io.CopyN(w, f, size); err != nil {
		return fmt.Errorf("ociimage: copy %s: %w", src, err)
	}
	return nil
}

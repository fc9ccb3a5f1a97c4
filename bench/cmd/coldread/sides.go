package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/basin-csi/basin/bench/dataset"
	"github.com/basin-csi/basin/bench/direct"
	"github.com/basin-csi/basin/bench/scenario"
	"github.com/basin-csi/basin/bench/sut"
	"github.com/basin-csi/basin/bench/wanproxy"
	"github.com/basin-csi/basin/pkg/objstore"
)

// side is one way of reading the objects, timed as a whole.
type side interface {
	name() string
	// read returns the timed read of all objects.
	read(ctx context.Context) func() (time.Duration, error)
}

// result is one timed side of a round.
type result struct {
	took time.Duration
	gets int64
}

func (r result) mbps(size int64) float64 { return float64(size) / r.took.Seconds() / 1e6 }

// measure drops the page cache, runs fn, which times itself, and counts
// the GETs it sent.
func measure(p *wanproxy.Proxy, fn func() (time.Duration, error)) (result, error) {
	if err := scenario.DropCaches(); err != nil {
		return result{}, err
	}
	before := p.Stats()
	took, err := fn()
	if err != nil {
		return result{}, err
	}
	return result{took: took, gets: p.Stats().Sub(before)[wanproxy.KindGet].Requests}, nil
}

// downloadSide downloads the objects one after the other, each by
// parallel ranged GETs (direct.Download).
type downloadSide struct {
	store    objstore.Store
	objs     []direct.Object
	part     int64
	parallel int
	toFile   bool
	work     string
}

func (d *downloadSide) name() string { return fmt.Sprintf("download%d", d.parallel) }

func (d *downloadSide) read(ctx context.Context) func() (time.Duration, error) {
	return func() (time.Duration, error) {
		var dest func() (io.WriterAt, func(), error) // nil: into memory
		if d.toFile {
			dest = d.tempFile
		}
		m, err := direct.Download(ctx, d.store, d.objs, d.part, d.parallel, dest)
		return m.Elapsed, err
	}
}

// tempFile is a new file under work, removed when done.
func (d *downloadSide) tempFile() (io.WriterAt, func(), error) {
	f, err := os.CreateTemp(d.work, "download-*")
	if err != nil {
		return nil, nil, err
	}
	return f, func() { _ = f.Close(); _ = os.Remove(f.Name()) }, nil
}

// mountSide reads the objects through a fresh mount of one binary with
// an empty cache, one after the other.
type mountSide struct {
	label, bin string
	flags      []string // after the shared -basin-flag ones
	sys        sut.System
	infos      []objstore.ObjectInfo
}

func (m *mountSide) name() string   { return m.label }
func (m *mountSide) String() string { return m.label + "=" + m.bin }

func (m *mountSide) read(ctx context.Context) func() (time.Duration, error) {
	return func() (time.Duration, error) { return readMounted(ctx, m.sys, m.infos) }
}

// readMounted mounts with an empty cache, then times the open and the
// sequential read of each object in 1 MiB reads, checks the sizes and
// unmounts.
func readMounted(ctx context.Context, s sut.System, infos []objstore.ObjectInfo) (time.Duration, error) {
	if err := s.DropCache(); err != nil {
		return 0, err
	}
	mnt, err := s.Mount(ctx)
	if err != nil {
		return 0, err
	}
	defer func() { _ = s.Unmount(ctx) }()
	buf := make([]byte, 1<<20)
	start := time.Now()
	for _, info := range infos {
		if err := readFile(filepath.Join(mnt, info.Key), info.Size, buf); err != nil {
			return 0, err
		}
	}
	return time.Since(start), nil
}

func readFile(path string, size int64, buf []byte) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer func() { _ = f.Close() }()
	n, err := io.CopyBuffer(io.Discard, onlyReader{f}, buf)
	if err == nil && n != size {
		err = fmt.Errorf("read %d bytes of %d of %s through the mount", n, size, path)
	}
	return err
}

// onlyReader hides WriterTo/ReaderFrom so that io.CopyBuffer uses read(2).
type onlyReader struct{ io.Reader }

// ensureObject writes key with deterministic content unless an object of
// that size is there.
func ensureObject(ctx context.Context, s objstore.Store, key string, size int64) error {
	if info, err := s.Stat(ctx, key); err == nil && info.Size == size {
		return nil
	}
	fmt.Printf("writing %s (%d MiB)\n", key, size>>20)
	_, err := s.Put(ctx, key, dataset.Checkpoint(1, size).Content(key, size), objstore.PutOptions{Size: size})
	return err
}

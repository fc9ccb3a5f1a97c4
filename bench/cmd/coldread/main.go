// Command coldread measures the FUSE issue's cold-read goal on a real
// mount: one sequential reader of a large object through a fresh Basin
// mount with an empty cache, against a plain download of the same object
// by parallel ranged GETs (into memory, or into a local file with
// -download-to-file), both through the same WAN emulator
// in front of MinIO, whose data is in a tmpfs (a remote bucket's disks
// are not the cache's disk). Rounds alternate which side goes first, the page
// cache is dropped before each side, and the report gives every round's
// ratio (mount/download), their median and the GETs each side sent.
//
// Run it as root (FUSE mount, drop_caches) from the repository root, after
// building the driver:
//
//	go build -o bin/csi-driver ./cmd/csi-driver
//	go run ./bench/cmd/coldread                  # WAN defaults: 30 ms, 60 MB/s per connection
//	go run ./bench/cmd/coldread -conn-mbps 0 -ttfb 0   # loopback MinIO, CPU-bound
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"syscall"
	"time"

	"github.com/basin-csi/basin/bench/dataset"
	"github.com/basin-csi/basin/bench/scenario"
	"github.com/basin-csi/basin/bench/servers"
	"github.com/basin-csi/basin/bench/sut"
	"github.com/basin-csi/basin/bench/wanproxy"
	"github.com/basin-csi/basin/pkg/objstore"
	"github.com/basin-csi/basin/pkg/objstore/backend"
	"github.com/basin-csi/basin/pkg/objstore/objstoretest"
	"golang.org/x/sys/unix"
)

const bucket = "basin-coldread"

type config struct {
	basin, minio, tools, work string
	basinFlags                []string
	size, part                int64
	parallel, rounds          int
	bucketOnDisk, toFile      bool
	proxy                     wanproxy.Config
}

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, os.Args[1:]); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			os.Exit(0)
		}
		fmt.Fprintln(os.Stderr, "coldread:", err)
		os.Exit(1)
	}
}

func parseFlags(args []string) (config, error) {
	home, _ := os.UserHomeDir()
	var c config
	fs := flag.NewFlagSet("coldread", flag.ContinueOnError)
	fs.StringVar(&c.basin, "basin", "bin/csi-driver", "csi-driver binary")
	fs.StringVar(&c.minio, "minio", "minio", "MinIO binary (name or path)")
	fs.StringVar(&c.tools, "tools", filepath.Join(home, ".cache/basin-tools/bin"), "directory searched first for minio")
	fs.StringVar(&c.work, "work", "/var/tmp/basin-coldread", "work directory: the mount's cache, and MinIO's data with -bucket-on-disk (kept for later runs)")
	fs.BoolVar(&c.bucketOnDisk, "bucket-on-disk", false, "keep MinIO's data under -work instead of a tmpfs: its reads then share the local disk with the cache's writes, which a remote bucket's do not")
	fs.Int64Var(&c.size, "size", 2<<30, "object size, bytes")
	fs.Int64Var(&c.part, "part", 8<<20, "download: bytes per ranged GET")
	fs.BoolVar(&c.toFile, "download-to-file", false, "download into a file on the cache's disk (under -work), as a download tool does, instead of into memory")
	fs.IntVar(&c.parallel, "parallel", 8, "download: concurrent ranged GETs (Basin's --max-parallel-fetches default)")
	fs.IntVar(&c.rounds, "rounds", 5, "rounds; each reads the object once per side")
	proxy := wanproxy.Flags(fs)
	fs.Func("basin-flag", "a `flag` for csi-driver mount, after the benchmark's defaults (repeatable: -basin-flag=--read-ahead=64Mi)", func(v string) error {
		c.basinFlags = append(c.basinFlags, v)
		return nil
	})
	if err := fs.Parse(args); err != nil {
		return c, err
	}
	c.proxy = *proxy
	if c.size <= 0 || c.part <= 0 || c.parallel <= 0 || c.rounds <= 0 {
		return c, fmt.Errorf("-size, -part, -parallel and -rounds must be positive")
	}
	abs, err := filepath.Abs(c.basin)
	c.basin = abs
	return c, err
}

func run(ctx context.Context, args []string) error {
	cfg, err := parseFlags(args)
	if err != nil {
		return err
	}
	bin := sut.FindBinary(cfg.minio, cfg.tools)
	if bin == "" {
		return fmt.Errorf("minio not found (GOBIN=%s go install github.com/minio/minio@latest)", cfg.tools)
	}
	data := filepath.Join(cfg.work, "minio")
	if !cfg.bucketOnDisk {
		data = filepath.Join(cfg.work, "minio-tmpfs")
		unmount, err := mountTmpfs(data, cfg.size+1<<30)
		if err != nil {
			return err
		}
		defer unmount()
	}
	srv, err := servers.StartMinIO(ctx, bin, data)
	if err != nil {
		return err
	}
	defer srv.Stop()
	cfg.proxy.Upstream = srv.Endpoint
	proxy, err := wanproxy.Start(cfg.proxy, "127.0.0.1:0")
	if err != nil {
		return err
	}
	defer func() { _ = proxy.Close() }()

	creds := objstore.Credentials{AccessKeyID: servers.MinIOAccessKey, SecretAccessKey: servers.MinIOSecretKey}
	oc := objstore.Config{Backend: objstore.BackendS3, Bucket: bucket, Endpoint: srv.Endpoint,
		Region: servers.MinIORegion, PathStyle: true}
	direct, err := servers.OpenBucket(ctx, oc, creds)
	if err != nil {
		return err
	}
	defer func() { _ = direct.Close() }()
	key := fmt.Sprintf("cold/%d.bin", cfg.size)
	if err := ensureObject(ctx, direct, key, cfg.size); err != nil {
		return err
	}
	oc.Endpoint = proxy.URL()
	viaProxy, err := backend.Open(ctx, oc, creds)
	if err != nil {
		return err
	}
	defer func() { _ = viaProxy.Close() }()
	info, err := viaProxy.Stat(ctx, key)
	if err != nil {
		return err
	}

	basin := sut.NewBasin(sut.Env{WorkDir: filepath.Join(cfg.work, "sut"), ToolsBin: cfg.tools,
		S3: sut.S3Target{Endpoint: proxy.URL(), Bucket: bucket, Region: servers.MinIORegion,
			AccessKey: servers.MinIOAccessKey, SecretKey: servers.MinIOSecretKey}}, cfg.basin, cfg.basinFlags...)
	if err := basin.Check(ctx); err != nil {
		return err
	}
	fmt.Printf("object %s, %d MiB; WAN: ttfb %v, %d MB/s per connection, %d MB/s total\n",
		key, cfg.size>>20, cfg.proxy.TTFB, cfg.proxy.ConnBandwidth/1e6, cfg.proxy.TotalBandwidth/1e6)
	sink := "memory"
	if cfg.toFile {
		sink = "a file under " + cfg.work
	}
	fmt.Printf("download: %d parallel ranged GETs of %d MiB into %s; mount: %s\n", cfg.parallel, cfg.part>>20, sink, basin.Describe())

	var ratios []float64
	for i := range cfg.rounds {
		var d, m result
		sides := []func() error{
			func() (err error) {
				d, err = measure(proxy, func() (time.Duration, error) {
					return download(ctx, viaProxy, info, cfg)
				})
				return err
			},
			func() (err error) {
				m, err = measure(proxy, func() (time.Duration, error) { return readMounted(ctx, basin, key, info.Size) })
				return err
			},
		}
		if i%2 == 1 {
			slices.Reverse(sides)
		}
		for _, side := range sides {
			if err := side(); err != nil {
				return err
			}
		}
		r := m.mbps(info.Size) / d.mbps(info.Size)
		ratios = append(ratios, r)
		fmt.Printf("round %d: download %4.0f MB/s (%d GETs), mount %4.0f MB/s (%d GETs), ratio %.2f\n",
			i+1, d.mbps(info.Size), d.gets, m.mbps(info.Size), m.gets, r)
	}
	slices.Sort(ratios)
	fmt.Printf("ratio mount/download: median %.2f, min %.2f, max %.2f (goal >= 0.9)\n",
		median(ratios), ratios[0], ratios[len(ratios)-1])
	return nil
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

// download times the plain download of info, into memory or into a new
// file under cfg.work (removed afterwards).
func download(ctx context.Context, s objstore.Store, info objstore.ObjectInfo, cfg config) (time.Duration, error) {
	var to io.WriterAt // nil: into memory
	if cfg.toFile {
		f, err := os.CreateTemp(cfg.work, "download-*")
		if err != nil {
			return 0, err
		}
		defer func() { _ = os.Remove(f.Name()) }()
		defer func() { _ = f.Close() }()
		to = f
	}
	start := time.Now()
	err := objstoretest.RangedDownload(ctx, s, info, cfg.part, cfg.parallel, to)
	return time.Since(start), err
}

// readMounted mounts with an empty cache, then times the open and the
// sequential read of key in 1 MiB reads, checks the size and unmounts.
func readMounted(ctx context.Context, s sut.System, key string, size int64) (time.Duration, error) {
	if err := s.DropCache(); err != nil {
		return 0, err
	}
	mnt, err := s.Mount(ctx)
	if err != nil {
		return 0, err
	}
	defer func() { _ = s.Unmount(ctx) }()
	start := time.Now()
	f, err := os.Open(filepath.Join(mnt, key))
	if err != nil {
		return 0, err
	}
	defer func() { _ = f.Close() }()
	n, err := io.CopyBuffer(io.Discard, onlyReader{f}, make([]byte, 1<<20))
	took := time.Since(start)
	if err == nil && n != size {
		err = fmt.Errorf("read %d bytes of %d through the mount", n, size)
	}
	return took, err
}

// mountTmpfs mounts a tmpfs of size bytes at dir for the bucket's data.
func mountTmpfs(dir string, size int64) (unmount func(), err error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	if err := unix.Mount("tmpfs", dir, "tmpfs", 0, fmt.Sprintf("size=%d,mode=0700", size)); err != nil {
		return nil, fmt.Errorf("tmpfs for the bucket at %s (or use -bucket-on-disk): %w", dir, err)
	}
	return func() { _ = unix.Unmount(dir, 0) }, nil
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

func median(sorted []float64) float64 {
	n := len(sorted)
	if n%2 == 1 {
		return sorted[n/2]
	}
	return (sorted[n/2-1] + sorted[n/2]) / 2
}

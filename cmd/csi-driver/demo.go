package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"hash/crc32"
	"io"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sort"
	"sync"
	"text/tabwriter"
	"time"

	"github.com/basin-csi/basin/pkg/objstore"
)

// demoConfig are the flags of `csi-driver demo`.
type demoConfig struct {
	workDir   string
	files     int
	fileSize  int64
	largeSize int64
	latency   time.Duration
	threads   int
	keep      bool
}

// runDemo is `csi-driver demo` (what `make demo` runs): it generates a
// local-directory bucket, mounts it with a cache exactly as `mount` does,
// reads everything twice and shows what the cache changed.
func runDemo(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	cfg := demoConfig{}
	fset := flag.NewFlagSet("demo", flag.ContinueOnError)
	fset.SetOutput(stderr)
	fset.StringVar(&cfg.workDir, "work-dir", "", "directory for the bucket, cache and mount point (default: a new temporary directory, removed at the end)")
	fset.IntVar(&cfg.files, "files", 3000, "number of small files")
	fset.Int64Var(&cfg.fileSize, "file-size", 64<<10, "size of each small file in bytes")
	fset.Int64Var(&cfg.largeSize, "large-size", 256<<20, "size of the one large file in bytes")
	fset.DurationVar(&cfg.latency, "latency", 20*time.Millisecond, "simulated object-store latency added to every request (a local directory is otherwise as fast as the cache)")
	fset.IntVar(&cfg.threads, "threads", 8, "parallel readers")
	fset.BoolVar(&cfg.keep, "keep", false, "keep the work directory (bucket and warm cache) at the end")
	if err := fset.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return nil
		}
		return err
	}
	if cfg.files < 0 || cfg.fileSize < 0 || cfg.largeSize < 0 || cfg.threads < 1 {
		return errors.New("demo: sizes must be >= 0 and --threads >= 1")
	}
	return demo(ctx, cfg, stdout)
}

func demo(ctx context.Context, cfg demoConfig, out io.Writer) error {
	work := cfg.workDir
	if work == "" {
		var err error
		if work, err = os.MkdirTemp("", "basin-demo-"); err != nil {
			return err
		}
	}
	if !cfg.keep {
		defer func() { _ = os.RemoveAll(work) }()
	}
	bucket, cacheDir, mnt := filepath.Join(work, "bucket"), filepath.Join(work, "cache"), filepath.Join(work, "mnt")
	for _, d := range []string{bucket, mnt} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return err
		}
	}

	_, _ = fmt.Fprintf(out, "Basin demo: a local-directory bucket in %s\n", bucket)
	start := time.Now()
	want, err := generateDataset(bucket, cfg)
	if err != nil {
		return fmt.Errorf("generate dataset: %w", err)
	}
	_, _ = fmt.Fprintf(out, "generated %d small files of %s and one file of %s in %v\n",
		cfg.files, formatBytes(cfg.fileSize), formatBytes(cfg.largeSize), time.Since(start).Round(time.Millisecond))

	mcfg, err := parseMountArgs([]string{"--cache-dir", cacheDir, "--cache-size", "8Gi", "--volume-id", "demo", "file://" + bucket, mnt})
	if err != nil {
		return err
	}
	var slow *slowStore
	sess, err := openMount(ctx, mcfg, func(s objstore.Store) objstore.Store {
		slow = &slowStore{Store: s, latency: cfg.latency}
		return slow
	}, nil)
	if err != nil {
		return fmt.Errorf("mount (run as root, with /dev/fuse and fuse3): %w", err)
	}
	defer sess.close()
	_, _ = fmt.Fprintf(out, "mounted at %s with its cache in %s; every bucket request waits %v\n\n", mnt, cacheDir, cfg.latency)

	tw := tabwriter.NewWriter(out, 0, 0, 2, ' ', tabwriter.AlignRight)
	_, _ = fmt.Fprintln(tw, "pass\tfiles\tMiB\tseconds\tMiB/s\tbucket requests\tMiB from bucket\t")
	var cold, warm passResult
	for i, name := range []string{"cold (first read)", "warm (page cache dropped)"} {
		if i == 1 && !dropPageCache() {
			name = "warm (page cache NOT dropped: not root)"
		}
		reqs, bytes := slow.requests.Load(), slow.bytes.Load()
		r, err := readAll(ctx, mnt, want, cfg.threads)
		if err != nil {
			return fmt.Errorf("%s pass: %w", name, err)
		}
		r.requests, r.bucketBytes = slow.requests.Load()-reqs, slow.bytes.Load()-bytes
		_, _ = fmt.Fprintf(tw, "%s\t%d\t%.0f\t%.2f\t%.0f\t%d\t%.0f\t\n", name, r.files, mib(r.bytes),
			r.elapsed.Seconds(), mib(r.bytes)/r.elapsed.Seconds(), r.requests, mib(r.bucketBytes))
		if i == 0 {
			cold = r
		} else {
			warm = r
		}
	}
	_ = tw.Flush()

	st := sess.cache.Stats()
	_, _ = fmt.Fprintf(out, "\nwarm pass: %.1fx the cold throughput; %.1f%% of its bytes came from the local cache, not the bucket\n",
		cold.elapsed.Seconds()/warm.elapsed.Seconds(), 100*(1-float64(warm.bucketBytes)/float64(max(warm.bytes, 1))))
	_, _ = fmt.Fprintf(out, "cache: %s on disk for %d objects; hits %d, misses %d, passthrough opens %d (fully cached files are read by the kernel directly)\n",
		formatBytes(st.UsedBytes), st.Objects, st.Hits, st.Misses, st.Passthrough)
	_, _ = fmt.Fprintln(out, "every byte read matched the bucket (CRC32 per file)")
	if cfg.keep {
		_, _ = fmt.Fprintf(out, "kept %s\n", work)
	}
	return nil
}

// generateDataset writes the demo files and returns their CRC32 by path.
func generateDataset(bucket string, cfg demoConfig) (map[string]uint32, error) {
	want := make(map[string]uint32, cfg.files+1)
	rng := rand.NewChaCha8([32]byte{'b', 'a', 's', 'i', 'n'})
	buf := make([]byte, 1<<20)
	write := func(rel string, size int64) error {
		p := filepath.Join(bucket, rel)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return err
		}
		f, err := os.Create(p)
		if err != nil {
			return err
		}
		h := crc32.NewIEEE()
		for left := size; left > 0; {
			n := min(left, int64(len(buf)))
			_, _ = rng.Read(buf[:n])
			h.Write(buf[:n])
			if _, err := f.Write(buf[:n]); err != nil {
				_ = f.Close()
				return err
			}
			left -= n
		}
		want[rel] = h.Sum32()
		return f.Close()
	}
	for i := 0; i < cfg.files; i++ {
		if err := write(fmt.Sprintf("images/class-%02d/img-%05d.jpg", i%20, i), cfg.fileSize); err != nil {
			return nil, err
		}
	}
	if cfg.largeSize > 0 {
		if err := write("checkpoints/model.ckpt", cfg.largeSize); err != nil {
			return nil, err
		}
	}
	return want, nil
}

// passResult is one read pass over the mount.
type passResult struct {
	files                 int
	bytes                 int64
	elapsed               time.Duration
	requests, bucketBytes int64
}

// readAll lists the mount, reads every file with threads readers, and checks
// each file's CRC32 against want.
func readAll(ctx context.Context, mnt string, want map[string]uint32, threads int) (passResult, error) {
	start := time.Now()
	var paths []string
	err := filepath.WalkDir(mnt, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.Type().IsRegular() {
			paths = append(paths, p)
		}
		return ctx.Err()
	})
	if err != nil {
		return passResult{}, err
	}
	if len(paths) != len(want) {
		return passResult{}, fmt.Errorf("listed %d files, the bucket has %d", len(paths), len(want))
	}
	// Large files first, so the big one does not run alone at the end.
	sort.Slice(paths, func(i, j int) bool { return filepath.Dir(paths[i]) < filepath.Dir(paths[j]) })

	var (
		mu    sync.Mutex
		total int64
		first error
		wg    sync.WaitGroup
	)
	work := make(chan string)
	for range threads {
		wg.Add(1)
		go func() {
			defer wg.Done()
			buf := make([]byte, 1<<20)
			for p := range work {
				n, sum, err := readFile(p, buf)
				rel, _ := filepath.Rel(mnt, p)
				if err == nil && sum != want[rel] {
					err = fmt.Errorf("%s: content differs from the bucket", rel)
				}
				mu.Lock()
				total += n
				if err != nil && first == nil {
					first = err
				}
				mu.Unlock()
			}
		}()
	}
	for _, p := range paths {
		work <- p
	}
	close(work)
	wg.Wait()
	return passResult{files: len(paths), bytes: total, elapsed: time.Since(start)}, first
}

func readFile(p string, buf []byte) (int64, uint32, error) {
	f, err := os.Open(p)
	if err != nil {
		return 0, 0, err
	}
	defer func() { _ = f.Close() }()
	h := crc32.NewIEEE()
	n, err := io.CopyBuffer(h, f, buf)
	return n, h.Sum32(), err
}

// dropPageCache asks the kernel to drop clean page-cache pages so the warm
// pass reads the cache's files from disk; it needs root.
func dropPageCache() bool {
	return os.WriteFile("/proc/sys/vm/drop_caches", []byte("3"), 0) == nil
}

func mib(n int64) float64 { return float64(n) / (1 << 20) }

func formatBytes(n int64) string {
	switch {
	case n >= 1<<30:
		return fmt.Sprintf("%.1f GiB", float64(n)/(1<<30))
	case n >= 1<<20:
		return fmt.Sprintf("%.0f MiB", float64(n)/(1<<20))
	default:
		return fmt.Sprintf("%d KiB", n>>10)
	}
}

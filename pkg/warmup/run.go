package warmup

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// Failure is a file or directory that could not be warmed.
type Failure struct {
	Path string
	Err  error
}

// Result is the outcome of Run.
type Result struct {
	Progress
	// Failures lists the first 100 failures; Progress.Errors counts all.
	Failures []Failure
	// StateNote says why records of a state file were not used, if so.
	StateNote string
	// Cache compares what was warmed with the cache (statfs of the
	// mount of the first path that exists).
	Cache CacheReport
}

// run is the state of one Run.
type run struct {
	// constant
	opts  Options
	st    *state // nil without a state file
	tasks chan task
	start time.Time

	files, bytes, skippedFiles, skippedBytes atomic.Int64
	foundFiles, foundBytes, dirs, errs       atomic.Int64
	walkDone                                 atomic.Bool

	mu       sync.Mutex // guards failures, pending
	failures []Failure
	pending  map[string]*dirPending
}

// Run warms paths (files or directories, walked recursively; symbolic
// links are not followed) and reports progress to opts.Progress. Files
// that cannot be read are listed in the Result, not returned as an error;
// the error is for invalid options, an unusable state file, or ctx ending
// (then the Result says how far the run got, and the state file keeps it).
// Run returns when all its goroutines ended; after ctx ends that is as
// soon as the reads and directory listings in flight return.
func Run(ctx context.Context, paths []string, opts Options) (Result, error) {
	opts, err := opts.withDefaults()
	if err != nil {
		return Result{}, err
	}
	roots, err := cleanRoots(paths)
	if err != nil {
		return Result{}, err
	}
	r := &run{opts: opts, tasks: make(chan task, 4*opts.Threads), start: time.Now(), pending: map[string]*dirPending{}}
	var res Result
	if opts.StateFile != "" {
		if r.st, res.StateNote, err = openState(opts.StateFile, roots, opts.mode(), opts.Restart); err != nil {
			return Result{}, err
		}
	}
	probe := firstExisting(roots) // whose mount's cache the report describes
	res.Cache.Before, res.Cache.Known = cacheUsage(probe)

	walked := make(chan struct{})
	go func() {
		defer close(walked)
		r.walk(ctx, roots, min(opts.Threads, maxListers))
	}()
	var wg sync.WaitGroup
	for range opts.Threads {
		wg.Go(func() { r.reader(ctx) })
	}
	readersDone := make(chan struct{})
	go func() { wg.Wait(); close(readersDone) }()
	tick := time.NewTicker(opts.ProgressInterval)
	defer tick.Stop()
	for running := true; running; {
		select {
		case <-readersDone:
			running = false
		case <-tick.C:
			if r.st != nil {
				_ = r.st.flush() // a write error surfaces at close
			}
			if opts.Progress != nil {
				opts.Progress(r.snapshot(false))
			}
		}
	}
	// Readers stop at once when ctx ends; the walker may still be listing
	// a directory. Run returns only when it stopped too: nothing of the
	// run outlives it, and nothing records into the closed state file.
	<-walked

	res.Progress = r.snapshot(true)
	r.mu.Lock()
	res.Failures = slices.Clone(r.failures)
	r.mu.Unlock()
	if opts.Progress != nil {
		opts.Progress(res.Progress)
	}
	res.Cache.SetBytes = res.FoundBytes
	if after, ok := cacheUsage(probe); ok && res.Cache.Known {
		res.Cache.After = after
	} else {
		res.Cache.Known = false
	}
	res.Cache.judge(opts.MetadataOnly)
	complete := ctx.Err() == nil && res.Errors == 0
	if r.st != nil {
		if err := r.st.close(complete); err != nil {
			return res, err
		}
	}
	return res, ctx.Err()
}

// cleanRoots makes paths absolute and drops those inside another.
func cleanRoots(paths []string) ([]string, error) {
	if len(paths) == 0 {
		return nil, fmt.Errorf("%w: no paths", ErrInvalidOptions)
	}
	var abs []string
	for _, p := range paths {
		a, err := filepath.Abs(p)
		if err != nil {
			return nil, fmt.Errorf("%w: %s: %w", ErrInvalidOptions, p, err)
		}
		abs = append(abs, a)
	}
	slices.Sort(abs)
	abs = slices.Compact(abs)
	var roots []string
	for _, a := range abs {
		if len(roots) > 0 && within(a, roots[len(roots)-1]) {
			continue
		}
		roots = append(roots, a)
	}
	return roots, nil
}

// firstExisting is the first of paths that exists, else the first.
func firstExisting(paths []string) string {
	for _, p := range paths {
		if _, err := os.Lstat(p); err == nil {
			return p
		}
	}
	return paths[0]
}

// within reports whether p is below (or is) dir.
func within(p, dir string) bool {
	return p == dir || strings.HasPrefix(p, strings.TrimSuffix(dir, "/")+"/")
}

// reader warms tasks until there are none or ctx ends.
func (r *run) reader(ctx context.Context) {
	buf := make([]byte, r.opts.BufferSize)
	for t := range r.tasks {
		if ctx.Err() != nil {
			return // the walker sees ctx too and closes tasks
		}
		err := r.warm(ctx, t, buf)
		if ctx.Err() != nil {
			return // interrupted: neither done nor failed
		}
		r.finish(t, err)
	}
}

// warm reads (or stats) one file.
func (r *run) warm(ctx context.Context, t task, buf []byte) error {
	if r.opts.MetadataOnly {
		fi, err := os.Lstat(t.path)
		if err == nil {
			r.bytes.Add(fi.Size())
		}
		return err
	}
	f, err := os.Open(t.path)
	if err != nil {
		return err
	}
	defer func() { _ = f.Close() }()
	for ctx.Err() == nil {
		n, err := f.Read(buf)
		r.bytes.Add(int64(n))
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
	}
	return ctx.Err()
}

// finish records a warmed (or failed) file.
func (r *run) finish(t task, err error) {
	if err != nil {
		r.fail(t.path, err)
	} else {
		r.files.Add(1)
		if r.st != nil {
			r.st.recordFile(t.path, t.key)
		}
	}
	if t.dir == "" {
		return
	}
	r.mu.Lock()
	p := r.pending[t.dir]
	if p == nil { // the directory's listing failed part way
		r.mu.Unlock()
		return
	}
	p.left--
	p.failed = p.failed || err != nil
	last := p.left == 0 && !p.failed
	if p.left == 0 {
		delete(r.pending, t.dir)
	}
	r.mu.Unlock()
	if last && r.st != nil {
		r.st.recordDir(t.dir, dirRecord{files: p.files, bytes: p.bytes})
	}
}

// expect registers a fully listed directory's files to warm; done are
// those an earlier run warmed.
func (r *run) expect(dir string, todo []task, done dirRecord) {
	rec := done
	for _, t := range todo {
		rec.files++
		rec.bytes += t.key.size
	}
	if len(todo) == 0 {
		if r.st != nil {
			r.st.recordDir(dir, rec)
		}
		return
	}
	r.mu.Lock()
	r.pending[dir] = &dirPending{left: len(todo), files: rec.files, bytes: rec.bytes}
	r.mu.Unlock()
}

// send queues t unless ctx ended first.
func (r *run) send(ctx context.Context, t task) bool {
	select {
	case r.tasks <- t:
		return true
	case <-ctx.Done():
		return false
	}
}

func (r *run) fail(path string, err error) {
	r.errs.Add(1)
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.failures) < maxFailures {
		r.failures = append(r.failures, Failure{Path: path, Err: err})
	}
}

func (r *run) found(files, bytes int64) {
	r.foundFiles.Add(files)
	r.foundBytes.Add(bytes)
}

func (r *run) skip(files, bytes int64) {
	r.skippedFiles.Add(files)
	r.skippedBytes.Add(bytes)
}

func (r *run) snapshot(done bool) Progress {
	return Progress{
		Elapsed: time.Since(r.start),
		Files:   r.files.Load(), Bytes: r.bytes.Load(),
		SkippedFiles: r.skippedFiles.Load(), SkippedBytes: r.skippedBytes.Load(),
		FoundFiles: r.foundFiles.Load(), FoundBytes: r.foundBytes.Load(),
		Dirs: r.dirs.Load(), Errors: r.errs.Load(),
		WalkDone: r.walkDone.Load(), MetadataOnly: r.opts.MetadataOnly, Done: done,
	}
}

package warmup

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sync"
)

// task is one file to warm.
type task struct {
	path string
	// dir is the parent directory whose record it counts towards; ""
	// for a file named as a root path.
	dir string
	key fileKey
}

// dirPending counts a directory's files still being warmed.
type dirPending struct {
	left         int
	files, bytes int64
	failed       bool
}

// walker lists directories in parallel and sends the files to warm.
type walker struct {
	r *run

	mu     sync.Mutex // guards queue, active, closed; cond waits on it
	cond   *sync.Cond
	queue  []string // directories to list
	active int      // directories being listed
	closed bool     // ctx ended: listers return
}

// walk lists roots (directories or files) with n listers and sends every
// file to r.tasks, which it closes when done.
func (r *run) walk(ctx context.Context, roots []string, n int) {
	w := &walker{r: r}
	w.cond = sync.NewCond(&w.mu)
	defer close(r.tasks)
	for _, root := range roots {
		fi, err := os.Lstat(root)
		switch {
		case err != nil:
			r.fail(root, err)
		case fi.IsDir():
			w.queue = append(w.queue, root)
		case fi.Mode().IsRegular():
			k := keyOf(fi)
			r.found(1, k.size)
			if r.st != nil && r.st.warmFile(root, k) {
				r.skip(1, k.size)
				continue
			}
			if !r.send(ctx, task{path: root, key: k}) {
				return
			}
		default:
			r.fail(root, fmt.Errorf("%w: not a regular file or a directory", ErrInvalidOptions))
		}
	}
	woken := make(chan struct{})
	stop := context.AfterFunc(ctx, func() {
		defer close(woken)
		w.mu.Lock()
		w.closed = true
		w.mu.Unlock()
		w.cond.Broadcast()
	})
	defer func() {
		// stop reports false once the wake-up has started; wait for it so
		// nothing of the walk outlives Run.
		if !stop() {
			<-woken
		}
	}()
	var wg sync.WaitGroup
	for range n {
		wg.Go(func() { w.lister(ctx) })
	}
	wg.Wait()
	r.walkDone.Store(true)
}

// lister lists directories until none is left or ctx ends.
func (w *walker) lister(ctx context.Context) {
	for {
		w.mu.Lock()
		for len(w.queue) == 0 && w.active > 0 && !w.closed {
			w.cond.Wait()
		}
		if w.closed || len(w.queue) == 0 {
			w.mu.Unlock()
			w.cond.Broadcast()
			return
		}
		dir := w.queue[len(w.queue)-1] // depth first: bounded queue
		w.queue = w.queue[:len(w.queue)-1]
		w.active++
		w.mu.Unlock()

		subdirs := w.list(ctx, dir)

		w.mu.Lock()
		w.queue = append(w.queue, subdirs...)
		w.active--
		w.mu.Unlock()
		w.cond.Broadcast()
	}
}

// list lists one directory, sends its files and returns its
// subdirectories.
func (w *walker) list(ctx context.Context, dir string) []string {
	r := w.r
	entries, err := os.ReadDir(dir)
	r.dirs.Add(1)
	if err != nil && len(entries) == 0 {
		r.fail(dir, err)
		return nil
	}
	if err != nil { // a partial listing: warm what was listed
		r.fail(dir, err)
	}
	var subdirs []string
	var rec dirRecord
	warm := false
	if r.st != nil {
		rec, warm = r.st.warmDir(dir)
	}
	if warm {
		r.found(rec.files, rec.bytes)
		r.skip(rec.files, rec.bytes)
	}
	var todo []task
	var done dirRecord // files skipped as warm by file record
	for _, e := range entries {
		p := filepath.Join(dir, e.Name())
		switch {
		case e.IsDir():
			subdirs = append(subdirs, p)
			continue
		case warm || !e.Type().IsRegular():
			continue // symbolic links and devices are not data
		}
		fi, err := e.Info()
		if errors.Is(err, fs.ErrNotExist) {
			continue // removed since the listing
		}
		if err != nil {
			r.fail(p, err)
			continue
		}
		k := keyOf(fi)
		r.found(1, k.size)
		if r.st != nil && r.st.warmFile(p, k) {
			r.skip(1, k.size)
			done.files++
			done.bytes += k.size
			continue
		}
		todo = append(todo, task{path: p, dir: dir, key: k})
	}
	if !warm && err == nil {
		r.expect(dir, todo, done)
	}
	for _, t := range todo {
		if !r.send(ctx, t) {
			break
		}
	}
	return subdirs
}

func keyOf(fi fs.FileInfo) fileKey {
	return fileKey{size: fi.Size(), mtime: fi.ModTime().UnixNano()}
}

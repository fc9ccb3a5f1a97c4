package scenario

import (
	"context"
	"io/fs"
	"os"
	"path/filepath"
	"time"
)

// Walk visits every entry under root like `find root -ls`: one thread,
// readdir of each directory and an lstat of each entry. Files counts the
// entries below root.
func Walk(ctx context.Context, root string) (Measure, error) {
	var m Measure
	start := time.Now()
	err := filepath.WalkDir(root, func(path string, _ fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if ctx.Err() != nil {
			return fs.SkipAll
		}
		if path == root {
			return nil
		}
		if _, err := os.Lstat(path); err != nil {
			return err
		}
		m.Files++
		return nil
	})
	m.Elapsed = time.Since(start)
	if err != nil {
		return m, err
	}
	return m, Stopped(ctx, &m)
}

package cache

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/basin-csi/basin/internal/cacheusage"
)

// Node is the node-level view over all volume caches under one cache root
// (/var/lib/basin/cache/<volume-id>): usage per volume and a node budget
// met by evicting idle volumes' caches first. A volume is in use while a
// process holds its cache open (the flock on its LOCK file); the node view
// never touches the data of a volume in use.
type Node struct {
	// constant
	root string
}

// VolumeUsage describes one volume's cache directory.
type VolumeUsage struct {
	VolumeID string
	Dir      string
	// UsedBytes is the allocation of the cache's data files, as the cache
	// last published it (or measured, if it never did).
	UsedBytes  int64
	Objects    int64
	Capacity   int64
	LastAccess time.Time
	// InUse: a process holds the cache open.
	InUse bool
}

// EnforceResult is what Enforce did.
type EnforceResult struct {
	// Before and After are the node's total cache bytes.
	Before, After int64
	// Evicted lists the idle volumes whose caches were shrunk or emptied.
	Evicted []string
}

// NewNode returns the view of the caches under root, creating it (0700).
func NewNode(root string) (*Node, error) {
	if err := os.MkdirAll(root, dirMode); err != nil {
		return nil, fmt.Errorf("cache: create cache root: %w", err)
	}
	return &Node{root: root}, nil
}

// VolumeDir is the cache directory of a volume. Volume ids must be one
// path element.
func (n *Node) VolumeDir(volumeID string) (string, error) {
	if volumeID == "" || volumeID == "." || volumeID == ".." || len(volumeID) > 255 ||
		strings.ContainsAny(volumeID, "/\x00") {
		return "", fmt.Errorf("%w: volume id %q", ErrInvalidArgument, volumeID)
	}
	return filepath.Join(n.root, volumeID), nil
}

// Volumes reports every volume cache under the root, largest first.
func (n *Node) Volumes(ctx context.Context) ([]VolumeUsage, error) {
	ents, err := os.ReadDir(n.root)
	if err != nil {
		return nil, fmt.Errorf("cache: read cache root: %w", err)
	}
	var out []VolumeUsage
	for _, e := range ents {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		if !e.IsDir() {
			continue
		}
		dir := filepath.Join(n.root, e.Name())
		u := VolumeUsage{VolumeID: e.Name(), Dir: dir, InUse: inUse(dir)}
		if uf, err := cacheusage.Read(dir); err == nil {
			u.UsedBytes, u.Objects, u.Capacity, u.LastAccess = uf.UsedBytes, uf.Objects, uf.Capacity, uf.LastAccess()
		} else if errors.Is(err, fs.ErrNotExist) {
			u.UsedBytes = duData(dir)
		}
		out = append(out, u)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].UsedBytes > out[j].UsedBytes })
	return out, nil
}

// inUse probes the volume's lock.
func inUse(dir string) bool {
	f, err := os.OpenFile(filepath.Join(dir, lockFileName), os.O_RDONLY, 0)
	if err != nil {
		return false
	}
	defer func() { _ = f.Close() }()
	return !tryFlock(f)
}

// duData sums the allocation of a cache's data files.
func duData(dir string) int64 {
	var total int64
	_ = filepath.WalkDir(filepath.Join(dir, dataDirName), func(_ string, d fs.DirEntry, err error) error {
		if err == nil && d.Type().IsRegular() {
			if fi, err := d.Info(); err == nil {
				total += allocated(fi)
			}
		}
		return nil
	})
	return total
}

// Enforce brings the node's cache bytes down to budget by evicting the
// least recently used objects of idle volumes, least recently used volumes
// first. Volumes in use are left to their own Capacity; if they alone
// exceed the budget, After stays above it.
func (n *Node) Enforce(ctx context.Context, budget int64) (EnforceResult, error) {
	vols, err := n.Volumes(ctx)
	if err != nil {
		return EnforceResult{}, err
	}
	var res EnforceResult
	for _, v := range vols {
		res.Before += v.UsedBytes
	}
	res.After = res.Before
	sort.SliceStable(vols, func(i, j int) bool { return vols[i].LastAccess.Before(vols[j].LastAccess) })
	var errs []error
	for _, v := range vols {
		if res.After <= budget {
			break
		}
		if v.InUse || v.UsedBytes == 0 {
			continue
		}
		c, err := open(ctx, v.Dir, nil, Options{VolumeID: v.VolumeID, MinFreeRatio: -1}, defaultTuning())
		if errors.Is(err, ErrLocked) {
			continue // opened meanwhile
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("volume %s: %w", v.VolumeID, err))
			continue
		}
		before := c.used.Load()
		c.evict(max(0, before-(res.After-budget)), -1)
		after := c.used.Load()
		if err := c.Close(); err != nil {
			errs = append(errs, fmt.Errorf("volume %s: %w", v.VolumeID, err))
		}
		res.After += after - v.UsedBytes
		if after < before {
			res.Evicted = append(res.Evicted, v.VolumeID)
		}
	}
	return res, errors.Join(errs...)
}

// Remove deletes an idle volume's cache directory (after DeleteVolume, or
// to drop a cache for good); ErrLocked if it is in use.
func (n *Node) Remove(ctx context.Context, volumeID string) error {
	dir, err := n.VolumeDir(volumeID)
	if err != nil {
		return err
	}
	if _, err := os.Stat(dir); errors.Is(err, os.ErrNotExist) {
		return nil
	}
	lock, err := lockDir(dir)
	if err != nil {
		return err
	}
	defer unlockDir(lock)
	// Everything but the lock file first, so no one can open a half
	// deleted cache; then the directory.
	ents, err := os.ReadDir(dir)
	if err != nil {
		return fmt.Errorf("cache: remove %s: %w", volumeID, err)
	}
	for _, e := range ents {
		if e.Name() == lockFileName {
			continue
		}
		if err := os.RemoveAll(filepath.Join(dir, e.Name())); err != nil {
			return fmt.Errorf("cache: remove %s: %w", volumeID, err)
		}
	}
	if err := os.RemoveAll(dir); err != nil {
		return fmt.Errorf("cache: remove %s: %w", volumeID, err)
	}
	return nil
}

package cache

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/basin-csi/basin/internal/cacheusage"
)

// Offline is a cache directory opened without a store, for inspection
// and maintenance (csi-driver cache) while no process serves it. Like a
// mount it holds the directory's lock (a mount starting meanwhile fails
// with ErrLocked until Close, so keep it short) and recovers an uncleanly
// closed cache first. Nothing it offers reaches the bucket.
type Offline struct {
	// constant
	c *Cache
	// usage is the usage file as published before opening: the capacity
	// and last access of the volume's last mount.
	usage cacheusage.Usage
}

// OpenOffline opens the cache in dir, which must exist. The counters of
// Stats start at zero; Capacity is the one the last mount published.
func OpenOffline(ctx context.Context, dir string) (*Offline, error) {
	if _, err := os.Stat(filepath.Join(dir, indexFileName)); err != nil {
		return nil, fmt.Errorf("%w: %s is not a cache directory: %w", ErrInvalidArgument, dir, err)
	}
	u, _ := cacheusage.Read(dir)
	id := u.VolumeID
	if id == "" {
		id = filepath.Base(dir)
	}
	// Capacity 0: opening never evicts; GC evicts towards the published
	// capacity explicitly.
	c, err := open(ctx, dir, nil, Options{VolumeID: id, MinFreeRatio: -1}, defaultTuning())
	if err != nil {
		return nil, err
	}
	return &Offline{c: c, usage: u}, nil
}

// VolumeID is the volume the cache belongs to (as its last mount
// published it, else the directory's name).
func (o *Offline) VolumeID() string { return o.c.opts.VolumeID }

// Dir is the cache directory.
func (o *Offline) Dir() string { return o.c.dir }

// Stats returns the cache's usage; its counters are this process's (zero
// but for GC's evictions).
func (o *Offline) Stats() Stats {
	s := o.c.Stats()
	s.Capacity = o.usage.Capacity
	return s
}

// Entries lists cached objects (see Cache.Entries).
func (o *Offline) Entries(ctx context.Context, q EntryQuery) ([]Entry, error) {
	return o.c.Entries(ctx, q)
}

// Verify checks the cache like fsck (see Cache.Verify).
func (o *Offline) Verify(ctx context.Context) (Report, error) { return o.c.Verify(ctx) }

// GC evicts down to target bytes; target < 0 means the low watermark of
// capacity, or of the published capacity when capacity is 0.
func (o *Offline) GC(target, capacity int64) (GCResult, error) {
	if target < 0 {
		if capacity <= 0 {
			capacity = o.usage.Capacity
		}
		if capacity <= 0 {
			return GCResult{}, fmt.Errorf("%w: no capacity published for %s; give a target", ErrInvalidArgument, o.c.dir)
		}
		target = int64(DefaultLowWatermark * float64(capacity))
	}
	return o.c.gcTo(target)
}

// Close closes the cache and publishes its usage with the capacity and
// last access of the volume's last mount (this process read nothing).
func (o *Offline) Close() error {
	err := o.c.Close()
	u, rerr := cacheusage.Read(o.c.dir)
	if rerr != nil {
		return errors.Join(err, rerr)
	}
	u.Capacity = o.usage.Capacity
	u.LastAccessNano = max(u.LastAccessNano, o.usage.LastAccessNano)
	return errors.Join(err, cacheusage.Write(o.c.dir, u))
}

// IsCacheDir reports whether dir holds a cache (its index).
func IsCacheDir(dir string) bool {
	st, err := os.Stat(filepath.Join(dir, indexFileName))
	return err == nil && st.Mode().IsRegular()
}

// InUse reports whether a process holds the cache in dir open. The probe
// takes the directory's lock for an instant.
func InUse(dir string) bool { return inUse(dir) }

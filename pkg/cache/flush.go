package cache

import (
	"os"
	"time"

	bolt "go.etcd.io/bbolt"
	"golang.org/x/sys/unix"
	"k8s.io/klog/v2"

	"github.com/basin-csi/basin/internal/cacheusage"
)

// The flusher persists in-memory state in group commits: new blocks
// (after syncing their data: data before index), access times, cached
// metadata. Losing a flush interval in a crash costs refetches, never
// wrong data.

// syncfsThreshold: with more files to sync than this, one syncfs is
// cheaper than one fdatasync each.
const syncfsThreshold = 16

func (c *Cache) flushLoop() {
	defer c.jobs.Done()
	t := time.NewTicker(c.tune.flushInterval)
	defer t.Stop()
	for {
		select {
		case <-c.stop:
			return
		case <-t.C:
		case <-c.flushKick:
		}
		if err := c.flushGrain(c.tune.atimeGrain); err != nil {
			klog.ErrorS(err, "Flushing the cache index", "volume", c.opts.VolumeID)
		}
	}
}

// objOp is one object's change in a flush.
type objOp struct {
	o     *object
	rec   *objRecord // nil: delete the record
	write bool       // rec or delete applies (else only atime)
	atime int64      // 0: unchanged
	file  *os.File   // to sync before commit
}

// flush writes dirty state to the index, with exact access times.
func (c *Cache) flush() error { return c.flushGrain(0) }

// flushGrain writes dirty state to the index. An access time that is all
// an object changed is written once it is grain newer than the indexed
// one (as relatime does): an epoch over a data set would otherwise rewrite
// the whole access-time and LRU index once per epoch, which cost 15% of
// the FUSE process's CPU in a warm small-file pass. Eviction order is
// then exact to within grain for objects no longer in memory.
func (c *Cache) flushGrain(grain time.Duration) error {
	g := int64(grain)
	if err := c.commitInodes(); err != nil {
		return err
	}
	c.flushMu.Lock()
	defer c.flushMu.Unlock()

	c.mu.Lock()
	cands := make([]*object, 0, len(c.dirtyObjs))
	for o := range c.dirtyObjs {
		cands = append(cands, o)
	}
	// An access time becomes due at the periodic flush's grain only by an
	// access, and touch queues those: the periodic flush looks at the
	// queue, a flush at a finer grain (Sync, Close: exact times) at every
	// object in memory.
	due := c.takeDueATimes()
	if g < int64(c.tune.atimeGrain) {
		due = make([]*object, 0, len(c.objs))
		for _, o := range c.objs {
			due = append(due, o)
		}
	}
	for _, o := range due {
		if c.objs[o.info.Key] != o {
			continue // left memory (a new version, an eviction) since
		}
		o.mu.Lock()
		touched := o.atimeDueLocked(g)
		o.mu.Unlock()
		if _, dirty := c.dirtyObjs[o]; !dirty && touched {
			cands = append(cands, o)
		}
	}
	clear(c.dirtyObjs)
	stale := make([]string, 0, len(c.staleKeys))
	for k := range c.staleKeys {
		if c.objs[k] == nil {
			stale = append(stale, k)
		}
	}
	clear(c.staleKeys)
	c.mu.Unlock()

	ops := make([]objOp, 0, len(cands))
	var files []*os.File
	for _, o := range cands {
		op := objOp{o: o}
		o.mu.Lock()
		if o.state != stateCurrent {
			o.mu.Unlock()
			continue
		}
		if o.dirty {
			op.write = true
			if o.anyPresent() {
				op.rec = o.recordLocked()
			}
			o.dirty = false
			if o.unsynced {
				op.file = o.file.Load()
				o.unsynced = false
			}
		}
		if at := o.atime.Load(); at != o.flushedATime.Load() && (op.rec != nil || (!op.write && o.inIndex && o.atimeDueLocked(g))) {
			op.atime = at
		}
		o.mu.Unlock()
		if op.rec != nil && op.atime == 0 {
			op.atime = o.flushedATime.Load()
			if op.atime == 0 {
				op.atime = c.nowNano()
			}
		}
		if op.file != nil {
			files = append(files, op.file)
		}
		if op.write || op.atime != 0 {
			ops = append(ops, op)
		}
	}
	attrs, lists := c.pendingMeta()

	if err := c.syncData(files); err != nil {
		// Nothing written since the last sync may be recorded.
		for i := range ops {
			if ops[i].file != nil {
				c.redirty(ops[i].o, true)
				ops[i].write, ops[i].rec = false, nil
			}
		}
		klog.ErrorS(err, "Syncing cache data", "volume", c.opts.VolumeID)
	}

	if len(ops) == 0 && len(stale) == 0 && len(attrs) == 0 && len(lists) == 0 {
		// Nothing to write: no empty commit (two fdatasyncs).
		c.trimIdle(g)
		c.writeUsage()
		return nil
	}
	var objects int64
	err := c.ix.update(func(tx *bolt.Tx) error {
		for _, op := range ops {
			if op.write && op.rec == nil {
				if err := deleteObject(tx, op.o.info.Key); err != nil {
					return err
				}
				continue
			}
			if op.write {
				if err := putObject(tx, op.o.info.Key, op.rec); err != nil {
					return err
				}
			}
			if op.atime != 0 {
				if err := setATime(tx, op.o.info.Key, op.atime); err != nil {
					return err
				}
			}
		}
		for _, k := range stale {
			if err := deleteObject(tx, k); err != nil {
				return err
			}
		}
		if err := writeMeta(tx, attrs, lists); err != nil {
			return err
		}
		objects = int64(getMetaU64(tx, metaObjects))
		return nil
	})
	if err != nil {
		for _, op := range ops {
			if op.write {
				c.redirty(op.o, op.file != nil)
			}
			if op.atime != 0 {
				c.queueDueATime(op.o)
			}
		}
		c.mu.Lock()
		for _, k := range stale {
			c.staleKeys[k] = struct{}{}
		}
		c.mu.Unlock()
		return err
	}
	c.mu.Lock()
	for _, op := range ops {
		if op.write {
			delete(c.unlinked, op.o.info.Key)
		}
	}
	for _, k := range stale {
		delete(c.unlinked, k)
	}
	c.mu.Unlock()
	for _, op := range ops {
		op.o.mu.Lock()
		if op.write {
			op.o.inIndex = op.rec != nil
		}
		if op.atime != 0 {
			op.o.flushedATime.Store(op.atime)
		}
		op.o.mu.Unlock()
	}
	c.objectCount.Store(objects)
	c.metaFlushed(attrs, lists)
	c.trimIdle(g)
	c.writeUsage()
	return nil
}

// redirty re-queues o after a failed flush.
func (c *Cache) redirty(o *object, unsynced bool) {
	o.mu.Lock()
	o.dirty = true
	if unsynced {
		o.unsynced = true
	}
	o.mu.Unlock()
	c.markDirty(o)
}

// syncData makes the given files' data durable.
func (c *Cache) syncData(files []*os.File) error {
	if len(files) == 0 {
		return nil
	}
	if len(files) > syncfsThreshold {
		return unix.Syncfs(int(c.dataDir.Fd()))
	}
	for _, f := range files {
		rc, err := f.SyscallConn()
		if err != nil {
			continue // closed: its object was detached or removed
		}
		var serr error
		if err := rc.Control(func(fd uintptr) { serr = unix.Fdatasync(int(fd)) }); err != nil {
			continue
		}
		if serr != nil {
			return serr
		}
	}
	return nil
}

// writeUsage publishes the usage file (internal/cacheusage) if the usage
// changed since it last did. The file is advisory (never the cache's own
// accounting) and rewritten at every flush, so it is not fsynced: a
// machine crash that leaves it stale or empty costs a wrong summary until
// the next flush, while an fsync would cost a disk flush at every flush.
func (c *Cache) writeUsage() {
	u := cacheusage.Usage{
		VolumeID:       c.opts.VolumeID,
		UsedBytes:      c.used.Load(),
		Objects:        c.objectCount.Load(),
		Capacity:       c.opts.CacheSize,
		LastAccessNano: c.lastAccess.Load(),
	}
	if c.opts.Tier != nil {
		u.SharedCacheDegraded = c.opts.Tier.Stats().Degraded
	}
	if report := c.uploads.Load(); report != nil {
		u.Uploads = (*report)()
	}
	c.usageMu.Lock()
	defer c.usageMu.Unlock()
	if u == c.lastUsage {
		return
	}
	if cacheusage.Write(c.dir, u) == nil {
		c.lastUsage = u
	}
}

// ReportUploads makes report part of the published usage from the next
// flush on: the file system's uploads after close, which the cache does
// not see.
func (c *Cache) ReportUploads(report func() cacheusage.Uploads) {
	c.uploads.Store(&report)
}

// flushMeta persists the metadata overlay alone (attributes, negative
// entries, listings), without the scan of every object that flush does.
func (c *Cache) flushMeta() error {
	c.flushMu.Lock()
	defer c.flushMu.Unlock()
	attrs, lists := c.pendingMeta()
	if len(attrs) == 0 && len(lists) == 0 {
		return nil
	}
	if err := c.ix.update(func(tx *bolt.Tx) error { return writeMeta(tx, attrs, lists) }); err != nil {
		return err
	}
	c.metaFlushed(attrs, lists)
	return nil
}

// atimeDueLocked reports whether o's access time must be written to the
// index: it changed, and by at least g ns unless none was written yet.
// The caller holds o.mu.
func (o *object) atimeDueLocked(g int64) bool {
	return atimeDue(o.atime.Load(), o.flushedATime.Load(), g)
}

// atimeDue reports whether access time at must be written to the index
// over the indexed f at grain g (ns): it changed, and by at least g
// unless none was written yet or the clock went back.
func atimeDue(at, f, g int64) bool {
	return at != f && (f == 0 || at-f >= g || at < f)
}

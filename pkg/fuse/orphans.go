package fuse

import (
	"context"
	"os"
	"time"

	"k8s.io/klog/v2"

	"github.com/basin-csi/basin/pkg/objstore"
)

// Incomplete multipart uploads this volume's processes left behind (S3,
// OSS; objstore.Uploads) are aborted, so no parts stay billed in the
// bucket until a lifecycle rule removes them:
//
//   - at start, before the first request is served, those of the files
//     the previous process of this volume on this node was writing when
//     it stopped (a kill during a large close or a streamed write): their
//     staged files are still in WritesDir, and name the inodes, hence the
//     keys (stagedwrites.go). No writer of this process exists yet, so every
//     upload of those keys from this node is the dead one's;
//   - in the background, at start and then every uploadSweepInterval
//     while mounted, every upload in the volume older than
//     objstore.AbandonedAge, whoever began it (another node's process
//     that died and never came back, for instance).
//
// Either may abort a live upload of another node's writer of the same key
// (two nodes writing one file, which is already last-upload-wins) or of a
// file written for more than a day: a stream aborted so is given up and
// the file uploaded whole at close (streamupload.go), a close's own upload
// fails with EIO and is tried again at release (writestate.go).
// basin_fuse_aborted_uploads_total counts the aborted uploads.

// uploadSweepInterval is how often a mounted volume looks for abandoned
// uploads. A day-old bound checked hourly leaves abandoned parts billed
// for at most 25 hours.
const uploadSweepInterval = time.Hour

// predecessorKeys returns the keys of the files whose staged copies a
// previous process of this volume left in WritesDir: the files it was
// writing when it stopped. Call it before the staged writes are scanned
// (scan removes those nobody will adopt).
func (f *FS) predecessorKeys() []string {
	entries, err := os.ReadDir(f.writes.dir)
	if err != nil {
		return nil
	}
	var keys []string
	seen := map[uint64]bool{}
	for _, e := range entries {
		ino, _, ok := parseName(e.Name())
		if !ok || seen[ino] {
			continue
		}
		seen[ino] = true
		if key, ok := f.cache.PathOf(ino); ok && key != "" {
			keys = append(keys, key)
		}
	}
	return keys
}

// abortPredecessorUploads aborts the incomplete uploads of keys (the
// files the previous process was writing) before serving starts. Failures
// are logged: the periodic sweep catches what is left once it is old.
func (f *FS) abortPredecessorUploads(ctx context.Context, keys []string) {
	ups, ok := objstore.UploadsOf(f.store)
	if !ok || len(keys) == 0 || f.cfg.ReadOnly {
		return
	}
	ctx, cancel := f.opContext(ctx)
	defer cancel()
	for _, key := range keys {
		n, err := objstore.AbortUploads(ctx, ups, key, func(u objstore.Upload) bool { return u.Key == key })
		f.counters.abortedUploads.Add(int64(n))
		if err != nil {
			klog.ErrorS(err, "aborting the uploads of the previous process", "volume", f.cfg.VolumeID, "key", key, "aborted", n)
			return
		}
		if n > 0 {
			klog.InfoS("aborted the incomplete uploads the previous process left", "volume", f.cfg.VolumeID, "key", key, "uploads", n)
		}
	}
}

// sweepUploads aborts every incomplete upload of the volume older than
// objstore.AbandonedAge at once and then every uploadSweepInterval, until
// done is closed.
func (f *FS) sweepUploads(done <-chan struct{}) {
	ups, ok := objstore.UploadsOf(f.store)
	if !ok || f.cfg.ReadOnly {
		return
	}
	t := time.NewTicker(uploadSweepInterval)
	defer t.Stop()
	for {
		ctx, cancel := f.opContext(context.Background())
		cutoff := time.Now().Add(-objstore.AbandonedAge)
		n, err := objstore.AbortUploads(ctx, ups, "", func(u objstore.Upload) bool { return u.Initiated.Before(cutoff) })
		cancel()
		f.counters.abortedUploads.Add(int64(n))
		switch {
		case err != nil:
			klog.V(2).InfoS("sweeping abandoned uploads failed; trying again later", "volume", f.cfg.VolumeID, "aborted", n, "err", err)
		case n > 0:
			klog.InfoS("aborted abandoned uploads", "volume", f.cfg.VolumeID, "uploads", n, "olderThan", objstore.AbandonedAge)
		}
		select {
		case <-done:
			return
		case <-t.C:
		}
	}
}

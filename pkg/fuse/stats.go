package fuse

import (
	"sync/atomic"

	"github.com/basin-csi/basin/internal/cacheusage"
)

// Stats are the file system's own counters (the cache counts hits and
// fetches).
type Stats struct {
	// PassthroughOpens counts opens served by FUSE passthrough.
	PassthroughOpens int64
	// UserOpens counts read opens served in user space.
	UserOpens int64
	// FileOpens counts OPEN requests of regular files, answered or not
	// (in OpenKernel mode only the first one arrives).
	FileOpens int64
	// InodeReaders counts cache handles opened to serve READs without a
	// file handle (OpenKernel mode).
	InodeReaders int64
	// UserReadBytes counts bytes returned by READ requests.
	UserReadBytes int64
	// Uploads and UploadBytes count objects written to the bucket.
	Uploads, UploadBytes int64
	// StreamedUploads counts files whose upload started while they were
	// written (streamupload.go), StreamedBytes the bytes uploaded before
	// their close or fsync, and StreamFallbacks the streams given up, by
	// reason (then the file is uploaded whole at close).
	StreamedUploads, StreamedBytes int64
	StreamFallbacks                map[string]int64
	// DirectWriteBytes counts bytes appended to streamed files' staged
	// files with O_DIRECT, past the page cache (stagedsource.go).
	DirectWriteBytes int64
	// AbortedUploads counts incomplete multipart uploads a dead process
	// left in the volume, aborted by this one (orphans.go).
	AbortedUploads int64
	// PendingUploads and PendingUploadBytes are the files whose close was
	// acknowledged and whose upload is pending (uploadMode: async, and a
	// predecessor's acknowledged files); UploadFailures counts the failed
	// background attempts (each is retried), SyncFallbacks the closes
	// over the bounds that uploaded synchronously, RecoveredUploads the
	// files a predecessor acknowledged that this process uploaded.
	PendingUploads, PendingUploadBytes int64
	UploadFailures, SyncFallbacks      int64
	RecoveredUploads                   int64
	// CreateConflicts counts files created with O_EXCL in async mode
	// whose first upload met another writer's object, which was kept
	// aside (exclusiveupload.go).
	CreateConflicts int64
}

// counters is the mutable form of Stats.
type counters struct {
	ptOpens, userOpens, userReadBytes, uploads, uploadBytes atomic.Int64
	opens, inodeReaders                                     atomic.Int64
	// readFlushes counts FLUSH requests of read handles: none while the
	// kernel honours FOPEN_NOFLUSH (tests check it).
	readFlushes atomic.Int64

	streams, streamedBytes, directBytes atomic.Int64
	fallbacks                           [numFallbacks]atomic.Int64

	abortedUploads atomic.Int64
	// createConflicts counts async exclusive creates whose first upload
	// met another writer's object (exclusiveupload.go).
	createConflicts atomic.Int64
}

// Stats returns a snapshot of the counters.
func (f *FS) Stats() Stats {
	files, bytes := f.uploads.usage()
	return Stats{
		PendingUploads:     int64(files),
		PendingUploadBytes: bytes,
		UploadFailures:     f.uploads.failures.Load(),
		SyncFallbacks:      f.uploads.fallbacks.Load(),
		RecoveredUploads:   f.uploads.recovered.Load(),
		CreateConflicts:    f.counters.createConflicts.Load(),
		PassthroughOpens:   f.counters.ptOpens.Load(),
		UserOpens:          f.counters.userOpens.Load(),
		FileOpens:          f.counters.opens.Load(),
		InodeReaders:       f.counters.inodeReaders.Load(),
		UserReadBytes:      f.counters.userReadBytes.Load(),
		Uploads:            f.counters.uploads.Load(),
		UploadBytes:        f.counters.uploadBytes.Load(),
		StreamedUploads:    f.counters.streams.Load(),
		StreamedBytes:      f.counters.streamedBytes.Load(),
		StreamFallbacks:    f.counters.fallbackCounts(),
		DirectWriteBytes:   f.counters.directBytes.Load(),
		AbortedUploads:     f.counters.abortedUploads.Load(),
	}
}

func (c *counters) fallbackCounts() map[string]int64 {
	m := make(map[string]int64, numFallbacks)
	for r := range numFallbacks {
		m[r.String()] = c.fallbacks[r].Load()
	}
	return m
}

// uploadUsage is the part of Stats the cache publishes in its usage file.
func (f *FS) uploadUsage() cacheusage.Uploads {
	files, bytes := f.uploads.usage()
	return cacheusage.Uploads{PendingUploads: int64(files), PendingUploadBytes: bytes,
		UploadFailures: f.uploads.failures.Load(), CreateConflicts: f.counters.createConflicts.Load()}
}

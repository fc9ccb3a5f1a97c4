// Package cacheusage is the usage file a volume's cache publishes in its
// directory (usage.json): what the cache holds and may hold, read by
// others without opening or locking the cache.
//
// It is the one way anything outside the cache's own process learns a
// cache's usage: the node plugin's cache status reporter
// (pkg/cachestatus), `csi-driver cache stats` of an idle volume and the
// cache's node view. pkg/cache writes it (Write) when the usage changed,
// at every index flush and at close; readers call Read. Because this
// package links neither the cache nor bbolt, a reader does not either.
//
// The file is advisory: written atomically but not fsynced, so a machine
// crash may leave it stale or missing until the cache next flushes. It is
// never the cache's own accounting, which lives in its index.
package cacheusage

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/basin-csi/basin/internal/atomicfile"
)

// FileName is the usage file's name in a cache directory.
const FileName = "usage.json"

// fileMode is the usage file's mode, like every file of a cache.
const fileMode = 0o600

// Usage is what a cache publishes about itself. It is comparable, so a
// writer can skip rewriting an unchanged file.
type Usage struct {
	// VolumeID is the volume whose cache it is.
	VolumeID string `json:"volumeID"`
	// UsedBytes is the allocation of the cache's data files.
	UsedBytes int64 `json:"usedBytes"`
	// Objects counts the cached objects.
	Objects int64 `json:"objects"`
	// Capacity is the cache's size cap; 0 means none.
	Capacity int64 `json:"capacity"`
	// LastAccessNano is the last read or open, in Unix nanoseconds; 0 if
	// unknown.
	LastAccessNano int64 `json:"lastAccessUnixNano"`
	// SharedCacheDegraded: the volume's shared cache tier fails (its
	// reads go to the bucket).
	SharedCacheDegraded bool `json:"sharedCacheDegraded,omitempty"`
	// Uploads is the volume's FUSE process's uploads after close.
	Uploads
}

// Uploads is what a volume's FUSE process reports of its uploads after
// close (uploadMode async; a predecessor's acknowledged files in either
// mode).
type Uploads struct {
	// PendingUploads and PendingUploadBytes: closes acknowledged whose
	// upload has not succeeded yet.
	PendingUploads     int64 `json:"pendingUploads,omitempty"`
	PendingUploadBytes int64 `json:"pendingUploadBytes,omitempty"`
	// UploadFailures counts the failed background upload attempts since
	// the process started; each upload is retried until it succeeds.
	UploadFailures int64 `json:"uploadFailures,omitempty"`
	// CreateConflicts counts exclusive creates whose upload met another
	// writer's object, kept aside under a conflict name.
	CreateConflicts int64 `json:"createConflicts,omitempty"`
}

// LastAccess is LastAccessNano as a time; zero if unknown.
func (u Usage) LastAccess() time.Time {
	if u.LastAccessNano <= 0 {
		return time.Time{}
	}
	return time.Unix(0, u.LastAccessNano)
}

// Read reads the usage the cache in dir last published.
func Read(dir string) (Usage, error) {
	var u Usage
	b, err := os.ReadFile(filepath.Join(dir, FileName))
	if err != nil {
		return u, fmt.Errorf("cacheusage: read: %w", err)
	}
	if err := json.Unmarshal(b, &u); err != nil {
		return Usage{}, fmt.Errorf("cacheusage: decode %s: %w", dir, err)
	}
	return u, nil
}

// Write replaces the usage file in dir with u, atomically but not
// fsynced (see the package documentation).
func Write(dir string, u Usage) error {
	b, err := json.Marshal(u)
	if err != nil {
		return fmt.Errorf("cacheusage: encode: %w", err)
	}
	if err := atomicfile.WriteFile(filepath.Join(dir, FileName), b, fileMode, atomicfile.NoSync); err != nil {
		return fmt.Errorf("cacheusage: write: %w", err)
	}
	return nil
}

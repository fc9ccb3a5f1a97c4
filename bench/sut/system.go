package sut

import (
	"context"
	"errors"
)

// ErrUnavailable marks a system that cannot run on this machine (binary
// missing, command not implemented yet). Reports show it as "n/a".
var ErrUnavailable = errors.New("sut: system unavailable")

// Backend is the kind of store a system reads.
type Backend string

// The backends a System may read.
const (
	BackendLocal Backend = "local"
	BackendS3    Backend = "s3"
	BackendGCS   Backend = "gcs"
)

// S3Target is the S3 bucket behind the WAN emulator.
type S3Target struct {
	Endpoint  string // the proxy's URL
	Bucket    string
	Region    string
	AccessKey string
	SecretKey string
}

// GCSTarget is the fake-gcs-server bucket behind the WAN emulator.
type GCSTarget struct {
	Endpoint string // the proxy's URL
	// Bucket names the bucket to mount now: each data set has a bucket
	// of its own on this side (the emulator's LIST reads a whole bucket).
	Bucket func() string
}

// Env is what every system needs to know about the benchmark.
type Env struct {
	// WorkDir holds one private subdirectory per system (mount point,
	// cache, config files, log).
	WorkDir string
	// LocalRoot is the local copy of the data sets (the ceiling).
	LocalRoot string
	// ToolsBin is searched for binaries before $PATH.
	ToolsBin string
	S3       S3Target
	GCS      GCSTarget
}

// System is one system under test.
type System interface {
	// Name is the report's column name.
	Name() string
	// Backend says which proxy's counters belong to this system.
	Backend() Backend
	// Check returns nil when the system can run, else an error wrapping
	// ErrUnavailable with the reason.
	Check(ctx context.Context) error
	// Describe is the mount command with its tuning flags, without
	// secrets, for the report.
	Describe() string
	// Mount makes the bucket visible and returns the directory it is at.
	Mount(ctx context.Context) (string, error)
	// Unmount undoes Mount and waits for the FUSE process to exit; the
	// persistent cache stays.
	Unmount(ctx context.Context) error
	// PID is the FUSE process while mounted, 0 otherwise or for Local.
	PID() int
	// PeakRSS is the largest VmHWM (bytes) of any FUSE process this system
	// ran so far, 0 if none.
	PeakRSS() int64
	// DropCache deletes the persistent cache; call it while unmounted.
	DropCache() error
}

// ReadsOnly reports whether sys mounts read-only (it implements
// ReadsOnly() returning true): its writing phases are n/a.
func ReadsOnly(sys System) bool {
	r, ok := sys.(interface{ ReadsOnly() bool })
	return ok && r.ReadsOnly()
}

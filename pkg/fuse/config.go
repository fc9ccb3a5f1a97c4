package fuse

import (
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/basin-csi/basin/internal/mountdefaults"
	"github.com/basin-csi/basin/pkg/cache"
	"github.com/basin-csi/basin/pkg/fuse/takeover"
	"github.com/basin-csi/basin/pkg/mountspec"
)

// Config is the file system's behaviour. The mount's settings are its
// spec (pkg/mountspec), embedded with the spec's names and meanings: the
// file system reads ReadOnly (with the "ro" mount option), UID, GID,
// FileMode, DirMode, MetadataTTL, NegativeMetadataTTL, ReadAhead,
// OpTimeout and OpenMode there, so a new setting the file system uses is
// a field of the spec and nothing here. Zero values mean what they mean
// in the spec (durations: 0 do not cache, negative forever; ReadAhead 0:
// no prefetching), except FileMode, DirMode, OpTimeout and OpenMode, whose
// zero means the default, and UID and GID, which a negative value makes
// the mounting process's own. Zero values of the file system's own knobs
// below mean the defaults.
type Config struct {
	// Spec is the mount's settings. MetadataTTL and NegativeMetadataTTL
	// are the kernel's entry, attribute and "no such file" timeouts (equal
	// to the cache's); ReadAhead caps the prefetch window of a sequential
	// reader; OpTimeout bounds every request to the bucket made on behalf
	// of one file system operation (and the wait for data of one read);
	// OpenMode is who opens regular files (OpenKernel needs ReadOnly,
	// inoderead.go); a ReadOnly mount fails every mutation with EROFS.
	mountspec.Spec
	// VolumeID names the volume in logs.
	VolumeID string
	// DisablePassthrough keeps all reads in user space even when the
	// kernel supports FUSE passthrough (for comparisons and debugging).
	DisablePassthrough bool
	// StreamPartSize and StreamParts shape the upload of a file written
	// sequentially while it is written (streamupload.go): the part size and
	// the parts in flight. Zero means DefaultStreamPartSize and
	// DefaultStreamParts; StreamParts < 0 turns streaming off (every file
	// is uploaded at close).
	StreamPartSize int64
	StreamParts    int
}

// Defaults for Config's zero values: a mount's (internal/mountdefaults is
// the one place they are written).
const (
	DefaultFileMode  os.FileMode = mountdefaults.FileMode
	DefaultDirMode   os.FileMode = mountdefaults.DirMode
	DefaultReadAhead int64       = mountdefaults.ReadAhead
	DefaultOpTimeout             = mountdefaults.OpTimeout
	// MinPrefetch is the first prefetch window of a sequential reader: two
	// of the cache's ranged GETs, so that a cold reader does not spend its
	// first round trips ramping up (pkg/cache BenchmarkColdSequential).
	MinPrefetch = 2 * cache.DefaultPartSize
	// prefetchStep is how much of the window must be free before it is
	// topped up: one ranged GET.
	prefetchStep = cache.DefaultPartSize
	// DefaultStreamPartSize and DefaultStreamParts: see Config and
	// docs/architecture.md "Writes that upload while they are written"
	// for the measurements behind them.
	DefaultStreamPartSize int64 = 8 << 20
	DefaultStreamParts          = 16
	// foreverTimeout stands in for "forever" in kernel timeouts.
	foreverTimeout = 365 * 24 * time.Hour
)

// ErrInvalidConfig is returned by New for a Config that cannot work.
var ErrInvalidConfig = errors.New("fuse: invalid configuration")

// withDefaults returns c with zero values replaced by the defaults.
func (c Config) withDefaults() Config {
	c.ReadOnly = c.Flags().ReadOnly
	if c.UID < 0 {
		c.UID = int64(os.Geteuid())
	}
	if c.GID < 0 {
		c.GID = int64(os.Getegid())
	}
	if c.FileMode == 0 {
		c.FileMode = DefaultFileMode
	}
	if c.DirMode == 0 {
		c.DirMode = DefaultDirMode
	}
	if c.OpTimeout == 0 {
		c.OpTimeout = DefaultOpTimeout
	}
	if c.BufferSize == 0 { // a hand-off of an older release, or a test
		c.BufferSize = mountspec.DefaultBufferSize
	}
	if c.StreamPartSize == 0 {
		c.StreamPartSize = DefaultStreamPartSize
	}
	if c.StreamParts == 0 {
		c.StreamParts = DefaultStreamParts
	}
	if c.OpenMode == "" {
		c.OpenMode = mountdefaults.OpenServer
	}
	return c
}

// Validate reports every problem of c at once.
func (c Config) Validate() error {
	var errs []error
	if c.FileMode&^os.ModePerm != 0 {
		errs = append(errs, fmt.Errorf("file mode %#o has bits outside 0777", uint32(c.FileMode)))
	}
	if c.DirMode&^os.ModePerm != 0 {
		errs = append(errs, fmt.Errorf("dir mode %#o has bits outside 0777", uint32(c.DirMode)))
	}
	if c.ReadAhead < 0 {
		errs = append(errs, fmt.Errorf("read-ahead %d is negative (0 turns prefetching off)", c.ReadAhead))
	}
	if c.OpTimeout < 0 {
		errs = append(errs, fmt.Errorf("op timeout %v is negative", c.OpTimeout))
	}
	if c.StreamPartSize < 0 {
		errs = append(errs, fmt.Errorf("stream part size %d is negative", c.StreamPartSize))
	}
	switch {
	case c.OpenMode != "" && !c.OpenMode.Valid():
		errs = append(errs, fmt.Errorf("open mode %q: want one of %v", c.OpenMode, mountdefaults.OpenModes()))
	case c.OpenMode == mountdefaults.OpenKernel && !c.Flags().ReadOnly:
		errs = append(errs, fmt.Errorf("open mode %q needs a read-only mount", c.OpenMode))
	}
	if len(errs) > 0 {
		return fmt.Errorf("%w: %w", ErrInvalidConfig, errors.Join(errs...))
	}
	return nil
}

// kernelTimeout turns a TTL into a kernel cache timeout.
func kernelTimeout(ttl time.Duration) time.Duration {
	if ttl < 0 {
		return foreverTimeout
	}
	return ttl
}

// MountOptions are the properties of the kernel mount, as opposed to the
// file system's behaviour.
type MountOptions struct {
	// AllowOther lets users other than the mounting one access the mount
	// (needs user_allow_other in /etc/fuse.conf unless root).
	AllowOther bool
	// FsName is the "source" column of the mount table, e.g. the bucket
	// URL. It must not contain secrets.
	FsName string
	// Debug logs every FUSE request and reply.
	Debug bool
	// NoExec and NoAtime are the noexec and noatime mount flags (nosuid
	// and nodev are always set). In fd mode the caller's mount(2) set
	// the flags and these are ignored.
	NoExec, NoAtime bool
	// Session makes an fd-mode mount resumable by a successor process
	// (pkg/fuse/takeover); zero for plain mounts.
	Session takeover.Options
}

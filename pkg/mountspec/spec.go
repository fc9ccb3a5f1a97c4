package mountspec

import (
	"errors"
	"fmt"
	"os"
	"path"
	"time"

	"github.com/basin-csi/basin/internal/mountdefaults"
	"github.com/basin-csi/basin/pkg/objstore"
)

// Version is the version of Spec this package reads and writes. A change
// that an older reader would misread (a new field with an effect, a
// changed meaning) increments it.
const Version = 1

// Sentinel errors, wrapped with context.
var (
	// ErrInvalid: a Spec (or a mount option, or a mount group) is not
	// valid. Messages name the field and the accepted values.
	ErrInvalid = errors.New("mountspec: invalid mount spec")
	// ErrVersion: a hand-off file holds a Spec of another version (the
	// node plugin and the mount process come from different releases).
	ErrVersion = errors.New("mountspec: unsupported mount spec version")
)

// invalidError is a problem that wraps ErrInvalid without repeating its
// text, so that callers can put their own context in front.
type invalidError struct{ msg string }

func (e invalidError) Error() string        { return e.msg }
func (e invalidError) Is(target error) bool { return target == ErrInvalid }

func invalidf(format string, a ...any) error { return invalidError{fmt.Sprintf(format, a...)} }

// Forever is the TTL that never expires (written "-1").
const Forever time.Duration = -1

// Spec is one mount. JSON field names are the volume attribute keys.
type Spec struct {
	// Version is the Spec's format version; Default sets it.
	Version int `json:"version"`

	// Where the data is.
	Backend objstore.Backend `json:"backend"`
	// Bucket is the bucket name, or the absolute directory of the file
	// backend.
	Bucket string `json:"bucket"`
	// Prefix is "" or a key prefix ending in "/" the mount is rooted at.
	Prefix    string `json:"prefix,omitempty"`
	Endpoint  string `json:"endpoint,omitempty"`
	Region    string `json:"region,omitempty"`
	PathStyle bool   `json:"pathStyle,omitempty"`
	Project   string `json:"project,omitempty"`

	// Cache and file system tuning.
	CacheSize           int64         `json:"cacheSize"`      // bytes; 0: only keep the disk's free-space floor
	CacheBlockSize      int64         `json:"cacheBlockSize"` // bytes, a multiple of 4Ki
	MetadataTTL         time.Duration `json:"metadataTTL"`    // 0: always revalidate; Forever: never
	NegativeMetadataTTL time.Duration `json:"negativeMetadataTTL"`
	ReadAhead           int64         `json:"readAhead"` // bytes; 0 disables prefetching
	MaxParallelFetches  int           `json:"maxParallelFetches"`
	// Prefetch fetches the other small files of a directory a reader
	// opens files of, in the background; PrefetchBudget bounds the bytes
	// so fetched that no reader opened since.
	Prefetch       bool  `json:"prefetch"`
	PrefetchBudget int64 `json:"prefetchBudget"`
	// BufferSize bounds the bytes of the cache's block buffers, and half
	// of it those of a streamed upload's parts (0 in a hand-off of an
	// older release: DefaultBufferSize).
	BufferSize int64 `json:"bufferSize,omitempty"`
	// OpTimeout bounds the bucket requests of one file system operation.
	OpTimeout time.Duration `json:"opTimeout"`

	// What the files look like.
	UID      int64       `json:"uid"` // -1: the mount process's own
	GID      int64       `json:"gid"` // -1: the mount process's own
	FileMode os.FileMode `json:"fileMode"`
	DirMode  os.FileMode `json:"dirMode"`
	ReadOnly bool        `json:"readOnly,omitempty"`
	// OpenMode is who opens regular files ("" in a hand-off of an older
	// release: OpenServer); OpenKernel needs a read-only mount.
	OpenMode mountdefaults.OpenMode `json:"openMode,omitempty"`
	// UploadMode is when a written file goes to the bucket ("" in a
	// hand-off of an older release: UploadSync).
	UploadMode mountdefaults.UploadMode `json:"uploadMode,omitempty"`
	// MountOptions are accepted mount options (options.go), without
	// duplicates; "ro" also sets ReadOnly.
	MountOptions []string `json:"mountOptions,omitempty"`
	// RcloneLinks stores symbolic links as rclone's --links does: an
	// object NAME.rclonelink whose body is the target, shown as link NAME.
	RcloneLinks bool `json:"rcloneLinks,omitempty"`

	// SharedCache is "" (none) or the shared cache tier:
	// http(s)://host[:port]/bucket[/prefix], an S3-compatible bucket
	// addressed path-style, or s3://bucket[/prefix], a bucket of Amazon S3
	// addressed as its SDK does (SharedCacheConfig). Its credentials are
	// the volume secret's sharedCache* keys, never here.
	SharedCache string `json:"sharedCache,omitempty"`
	// SharedCacheRegion is the tier's signing region; "" means Region.
	SharedCacheRegion string `json:"sharedCacheRegion,omitempty"`
}

// Defaults of a mount, written in internal/mountdefaults (see there why).
const (
	DefaultBackend             = objstore.BackendS3
	DefaultCacheSize           = mountdefaults.CacheSize
	DefaultCacheBlockSize      = mountdefaults.CacheBlockSize
	DefaultMetadataTTL         = mountdefaults.MetadataTTL
	DefaultNegativeMetadataTTL = mountdefaults.NegativeMetadataTTL
	DefaultMaxParallelFetches  = mountdefaults.MaxParallelFetches
	DefaultReadAhead           = mountdefaults.ReadAhead
	DefaultPrefetchBudget      = mountdefaults.PrefetchBudget
	DefaultBufferSize          = mountdefaults.BufferSize
	DefaultOpTimeout           = mountdefaults.OpTimeout
	DefaultFileMode            = mountdefaults.FileMode
	DefaultDirMode             = mountdefaults.DirMode
	DefaultOpenMode            = mountdefaults.OpenServer
	DefaultUploadMode          = mountdefaults.UploadSync
)

// Limits of the settings (settings.go states each once).
const (
	MinCacheBlockSize     = mountdefaults.MinCacheBlockSize
	MaxCacheBlockSize     = mountdefaults.MaxCacheBlockSize
	MinBufferSize         = mountdefaults.MinBufferSize
	MaxBufferSize         = mountdefaults.MaxBufferSize
	MaxParallelFetches    = 1024
	MaxID                 = 1<<32 - 2
	ModeBits              = os.FileMode(0o777)
	MaxMountOptionsLength = 1024 // bytes of the comma-separated list
)

// Default returns the Spec of a volume without attributes, except where
// the data is (Bucket is empty).
func Default() Spec {
	return Spec{
		Version:             Version,
		Backend:             DefaultBackend,
		CacheSize:           DefaultCacheSize,
		CacheBlockSize:      DefaultCacheBlockSize,
		MetadataTTL:         DefaultMetadataTTL,
		NegativeMetadataTTL: DefaultNegativeMetadataTTL,
		ReadAhead:           DefaultReadAhead,
		MaxParallelFetches:  DefaultMaxParallelFetches,
		Prefetch:            true,
		PrefetchBudget:      DefaultPrefetchBudget,
		BufferSize:          DefaultBufferSize,
		OpTimeout:           DefaultOpTimeout,
		UID:                 -1,
		GID:                 -1,
		FileMode:            DefaultFileMode,
		DirMode:             DefaultDirMode,
		OpenMode:            DefaultOpenMode,
		UploadMode:          DefaultUploadMode,
	}
}

// Validate reports every problem of s at once: each setting out of its
// limits (settings.go), no bucket, and OpenKernel on a mount that is not
// read-only. The error wraps ErrInvalid (or ErrVersion for another
// Version).
func (s Spec) Validate() error {
	if s.Version != Version {
		return fmt.Errorf("%w: version %d (this build reads version %d)", ErrVersion, s.Version, Version)
	}
	errs := s.checkSettings(nil)
	if s.Bucket == "" {
		errs = append(errs, fmt.Errorf("%s: not set", KeyBucket))
	}
	if err := CheckOpenMode(s.OpenMode, s.Flags().ReadOnly); err != nil {
		errs = append(errs, err)
	}
	if len(errs) > 0 {
		return fmt.Errorf("%w: %w", ErrInvalid, errors.Join(errs...))
	}
	return nil
}

// StoreConfig is the objstore configuration of the bucket; wrap the Store
// with objstore.WithPrefix(store, s.Prefix).
func (s Spec) StoreConfig() objstore.Config {
	return objstore.Config{
		Backend:   s.Backend,
		Bucket:    s.Bucket,
		Endpoint:  s.Endpoint,
		Region:    s.Region,
		Project:   s.Project,
		PathStyle: s.PathStyle,
		// A bucket request never outlives the operation it serves.
		RequestTimeout: min(objstore.DefaultRequestTimeout, s.OpTimeout),
	}
}

// SharedCacheConfig is the objstore configuration of the shared cache
// tier and the key prefix of its objects ("" or ending in "/"); ok is
// false without one. Every request of the tier has its own short timeout
// and no retry: a tier that does not answer at once is a miss, not a wait.
// An http(s) tier is addressed path-style at its endpoint; an s3:// tier
// has no endpoint, so the SDK addresses it virtual-hosted at Amazon S3's
// endpoints of its region (SharedCacheRegion, else Region), and for a
// directory bucket of S3 Express One Zone (a name ending in --x-s3) at
// its zone's endpoint with the session authentication it requires.
func (s Spec) SharedCacheConfig() (cfg objstore.Config, prefix string, ok bool) {
	if s.SharedCache == "" {
		return objstore.Config{}, "", false
	}
	endpoint, bucket, prefix, err := splitSharedCache(s.SharedCache)
	if err != nil {
		return objstore.Config{}, "", false // Validate refuses it
	}
	region := s.SharedCacheRegion
	if region == "" {
		region = s.Region
	}
	return objstore.Config{
		Backend:        objstore.BackendS3,
		Bucket:         bucket,
		Endpoint:       endpoint,
		Region:         region,
		PathStyle:      endpoint != "",
		RequestTimeout: SharedCacheOpTimeout,
		MaxAttempts:    1,
		// A small object (up to 8 MiB) is one tier object with its
		// header: one PUT, never a multipart upload.
		PartSize: 16 << 20,
	}, prefix, true
}

// SharedCacheOpTimeout bounds one request to the shared cache tier.
const SharedCacheOpTimeout = 2 * time.Second

// SourceURL names the bucket and prefix: s3://bucket/prefix, oss://...,
// gs://..., or file:///dir/prefix (for the file backend a prefix is a
// subdirectory). It never holds a secret.
func (s Spec) SourceURL() string {
	switch s.Backend {
	case objstore.BackendFile:
		return "file://" + path.Join(s.Bucket, s.Prefix)
	case objstore.BackendGCS:
		return "gs://" + s.Bucket + "/" + s.Prefix
	}
	return string(s.Backend) + "://" + s.Bucket + "/" + s.Prefix
}

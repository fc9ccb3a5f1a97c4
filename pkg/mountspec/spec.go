package mountspec

import (
	"errors"
	"fmt"
	"net/url"
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
	// MountOptions are accepted mount options (options.go), without
	// duplicates; "ro" also sets ReadOnly.
	MountOptions []string `json:"mountOptions,omitempty"`
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
	DefaultOpTimeout           = mountdefaults.OpTimeout
	DefaultFileMode            = mountdefaults.FileMode
	DefaultDirMode             = mountdefaults.DirMode
	DefaultOpenMode            = mountdefaults.OpenServer
)

// Limits checked by Validate (and by volumeattr's parser, which quotes
// them in its messages).
const (
	MinCacheBlockSize     = mountdefaults.MinCacheBlockSize
	MaxCacheBlockSize     = mountdefaults.MaxCacheBlockSize
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
		OpTimeout:           DefaultOpTimeout,
		UID:                 -1,
		GID:                 -1,
		FileMode:            DefaultFileMode,
		DirMode:             DefaultDirMode,
		OpenMode:            DefaultOpenMode,
	}
}

// Validate reports every problem of s at once; the error wraps ErrInvalid
// (or ErrVersion for another Version).
func (s Spec) Validate() error {
	if s.Version != Version {
		return fmt.Errorf("%w: version %d (this build reads version %d)", ErrVersion, s.Version, Version)
	}
	var errs []error
	bad := func(format string, a ...any) { errs = append(errs, fmt.Errorf(format, a...)) }
	sc := s.StoreConfig()
	if err := sc.Validate(); err != nil {
		errs = append(errs, err)
	}
	if s.Endpoint != "" {
		if err := CheckEndpoint(s.Endpoint); err != nil {
			bad("endpoint %q: %v", s.Endpoint, err)
		}
	}
	if s.Prefix != "" && (s.Prefix[0] == '/' || s.Prefix[len(s.Prefix)-1] != '/') {
		bad("prefix %q: want no leading and one trailing /", s.Prefix)
	}
	if s.CacheSize < 0 {
		bad("cacheSize %d: want 0 or more bytes", s.CacheSize)
	}
	if s.CacheBlockSize < MinCacheBlockSize || s.CacheBlockSize > MaxCacheBlockSize || s.CacheBlockSize%MinCacheBlockSize != 0 {
		bad("cacheBlockSize %d: want from 4Ki to 1Gi, a multiple of 4Ki", s.CacheBlockSize)
	}
	if s.MetadataTTL < Forever || s.NegativeMetadataTTL < Forever {
		bad("metadata TTLs %v/%v: the only negative value is -1 (forever)", s.MetadataTTL, s.NegativeMetadataTTL)
	}
	if s.ReadAhead < 0 {
		bad("readAhead %d: want 0 (off) or more bytes", s.ReadAhead)
	}
	if s.MaxParallelFetches < 1 || s.MaxParallelFetches > MaxParallelFetches {
		bad("maxParallelFetches %d: want from 1 to %d", s.MaxParallelFetches, MaxParallelFetches)
	}
	if s.PrefetchBudget < 1 {
		bad("prefetchBudget %d: want 1 or more bytes (prefetch false turns prefetching off)", s.PrefetchBudget)
	}
	if s.OpTimeout <= 0 {
		bad("opTimeout %v: want a positive duration", s.OpTimeout)
	}
	for _, id := range []struct {
		name string
		v    int64
	}{{"uid", s.UID}, {"gid", s.GID}} {
		if id.v < -1 || id.v > MaxID {
			bad("%s %d: want -1 (unset) or 0 to %d", id.name, id.v, int64(MaxID))
		}
	}
	if s.FileMode&^ModeBits != 0 || s.DirMode&^ModeBits != 0 {
		bad("fileMode %04o, dirMode %04o: want permission bits up to 0777", uint32(s.FileMode), uint32(s.DirMode))
	}
	if _, err := ParseOptions(s.MountOptions); err != nil {
		errs = append(errs, err)
	}
	if err := CheckOpenMode(s.OpenMode, s.Flags().ReadOnly); err != nil {
		errs = append(errs, err)
	}
	if len(errs) > 0 {
		return fmt.Errorf("%w: %w", ErrInvalid, errors.Join(errs...))
	}
	return nil
}

// CheckEndpoint accepts http(s)://host[:port][/path] without credentials,
// query or fragment.
func CheckEndpoint(v string) error {
	u, err := url.Parse(v)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return errors.New("want an http(s)://host[:port] URL")
	}
	if u.User != nil {
		return errors.New("credentials do not belong in the URL; put them in the secret")
	}
	if u.RawQuery != "" || u.Fragment != "" {
		return errors.New("no query or fragment allowed")
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

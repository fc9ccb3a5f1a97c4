package volumeattr

import (
	"errors"
	"fmt"
	"os"
	"path"
	"time"

	"github.com/basin-csi/basin/pkg/objstore"
)

// ErrInvalid is wrapped by every error Parse and ParseSecrets return.
var ErrInvalid = errors.New("volumeattr: invalid volume attributes")

// Forever is the TTL value "-1": cached metadata never expires (immutable
// data sets).
const Forever time.Duration = -1

// Provisioning is how CreateVolume makes a volume.
type Provisioning string

// Provisioning modes.
const (
	// ProvisionBucket creates a bucket per volume; its name is derived
	// from the volume name.
	ProvisionBucket Provisioning = "bucket"
	// ProvisionPrefix creates a prefix per volume inside an existing
	// bucket.
	ProvisionPrefix Provisioning = "prefix"
)

// Reclaim is what DeleteVolume does with a volume's data.
type Reclaim string

// Reclaim policies.
const (
	// ReclaimDelete removes the prefix's objects, or the bucket with its
	// objects.
	ReclaimDelete Reclaim = "delete"
	// ReclaimRetain leaves the data in place.
	ReclaimRetain Reclaim = "retain"
)

// Defaults of the attributes a StorageClass or PV leaves out. They match
// the defaults of `csi-driver mount`.
const (
	DefaultBackend             = objstore.BackendS3
	DefaultCacheSize           = 10 << 30
	DefaultCacheBlockSize      = 4 << 20
	DefaultMetadataTTL         = time.Minute
	DefaultNegativeMetadataTTL = 5 * time.Second
	DefaultReadAhead           = 128 << 20 // = pkg/fuse.DefaultReadAhead (cmd/csi-driver tests it)
	DefaultMaxParallelFetches  = 8
	DefaultFileMode            = os.FileMode(0o644)
	DefaultDirMode             = os.FileMode(0o755)
	DefaultReclaim             = ReclaimDelete
)

// Limits checked by Parse.
const (
	minBlockSize          = 4 << 10
	maxBlockSize          = 1 << 30
	maxParallelFetches    = 1024
	maxID                 = 1<<32 - 2
	maxModeBits           = 0o777
	maxRegionLen          = 64
	maxBucketLen          = 255 // S3 legacy names; checked per backend
	maxPrefixLen          = 512
	maxMountOptionsLength = 1024
)

// Attributes are the typed volume attributes. The zero value is not valid;
// start from Defaults or Parse.
type Attributes struct {
	// Where the data is.
	Backend objstore.Backend
	// Bucket is the bucket name, or the absolute directory for the file
	// backend. Empty only in StorageClass parameters with
	// provisioning=bucket.
	Bucket string
	// Prefix is "" or a key prefix ending in "/" (no leading "/", no empty,
	// "." or ".." segment).
	Prefix    string
	Endpoint  string
	Region    string
	PathStyle bool
	Project   string

	// Cache and file system tuning.
	CacheSize           int64         // bytes; 0: only keep the disk's free-space floor
	CacheBlockSize      int64         // bytes, a multiple of 4Ki
	MetadataTTL         time.Duration // 0: always revalidate; Forever: never
	NegativeMetadataTTL time.Duration // same conventions
	ReadAhead           int64         // bytes; 0 disables prefetching
	MaxParallelFetches  int

	// What the files look like.
	UID, GID          int64 // -1: unset (the FUSE process's own)
	FileMode, DirMode os.FileMode
	ReadOnly          bool
	// MountOptions are extra FUSE mount options, without commas or spaces.
	// nil when there are none.
	MountOptions []string
	// Warmup are the paths inside the volume (relative, without leading
	// or trailing "/"; WarmupAll for the whole volume) read in the
	// background after stage. nil when there are none.
	Warmup []string

	// Controller behaviour.
	Provisioning Provisioning
	Reclaim      Reclaim

	// Secrets are the credentials from the secret map; never encoded.
	Secrets Secrets
}

// Defaults returns the attributes of an empty parameter map, except
// Provisioning, which Parse derives from Bucket (prefix when a bucket is
// given, bucket otherwise).
func Defaults() Attributes {
	return Attributes{
		Backend:             DefaultBackend,
		CacheSize:           DefaultCacheSize,
		CacheBlockSize:      DefaultCacheBlockSize,
		MetadataTTL:         DefaultMetadataTTL,
		NegativeMetadataTTL: DefaultNegativeMetadataTTL,
		ReadAhead:           DefaultReadAhead,
		MaxParallelFetches:  DefaultMaxParallelFetches,
		UID:                 -1,
		GID:                 -1,
		FileMode:            DefaultFileMode,
		DirMode:             DefaultDirMode,
		Reclaim:             DefaultReclaim,
	}
}

// CheckMountable reports whether a names something a node can mount: the
// bucket must be known. StorageClass parameters with provisioning=bucket
// are valid without one; a volume's attributes are not.
func (a Attributes) CheckMountable() error {
	if a.Bucket == "" {
		return fmt.Errorf("%w: %s is not set", ErrInvalid, KeyBucket)
	}
	return nil
}

// StoreConfig is the objstore configuration of a's bucket. The prefix is
// not part of it: wrap the Store with objstore.WithPrefix(s, a.Prefix).
func (a Attributes) StoreConfig() objstore.Config {
	return objstore.Config{
		Backend:   a.Backend,
		Bucket:    a.Bucket,
		Endpoint:  a.Endpoint,
		Region:    a.Region,
		Project:   a.Project,
		PathStyle: a.PathStyle,
	}
}

// Credentials are the secret's credentials for objstore; the zero value
// (no credential in the secret) selects the backend's default chain.
func (a Attributes) Credentials() objstore.Credentials { return a.Secrets.Credentials() }

// SourceURL is the SOURCE argument of `csi-driver mount` for a's bucket and
// prefix: s3://bucket/prefix, oss://..., gs://..., or file:///dir/prefix
// (for the file backend a prefix is a subdirectory).
func (a Attributes) SourceURL() string {
	switch a.Backend {
	case objstore.BackendFile:
		return "file://" + path.Join(a.Bucket, a.Prefix)
	case objstore.BackendGCS:
		return "gs://" + a.Bucket + "/" + a.Prefix
	}
	return string(a.Backend) + "://" + a.Bucket + "/" + a.Prefix
}

package volumeattr

import (
	"errors"
	"fmt"
	"os"
	"slices"
	"time"

	"github.com/basin-csi/basin/pkg/mountspec"
	"github.com/basin-csi/basin/pkg/objstore"
)

// ErrInvalid is wrapped by every error Parse and ParseSecrets return.
var ErrInvalid = errors.New("volumeattr: invalid volume attributes")

// Forever is the TTL value "-1": cached metadata never expires (immutable
// data sets).
const Forever = mountspec.Forever

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

// DefaultReclaim is what DeleteVolume does unless the StorageClass says.
// Every other default is mountspec.Default's.
const DefaultReclaim = ReclaimDelete

// Limits checked by Parse (those of a mount are mountspec's).
const (
	minBlockSize          = mountspec.MinCacheBlockSize
	maxBlockSize          = mountspec.MaxCacheBlockSize
	maxParallelFetches    = mountspec.MaxParallelFetches
	maxID                 = mountspec.MaxID
	maxModeBits           = mountspec.ModeBits
	maxRegionLen          = 64
	maxBucketLen          = 255 // S3 legacy names; checked per backend
	maxPrefixLen          = 512
	maxMountOptionsLength = mountspec.MaxMountOptionsLength
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
	Prefetch            bool  // directory prefetch on
	PrefetchBudget      int64 // bytes prefetched and not opened since, at most

	// What the files look like.
	UID, GID          int64 // -1: unset (the FUSE process's own)
	FileMode, DirMode os.FileMode
	ReadOnly          bool
	// OpenMode is who opens regular files; OpenKernel needs a read-only
	// mount (checked by mountspec.Spec.Validate, which knows the access
	// mode).
	OpenMode mountspec.OpenMode
	// MountOptions are accepted mount options (mountspec.ParseOptions),
	// without duplicates. nil when there are none.
	MountOptions []string
	// Warmup are the paths inside the volume (relative, without leading
	// or trailing "/"; WarmupAll for the whole volume) read in the
	// background after stage. nil when there are none.
	Warmup []string

	// Controller behaviour.
	Provisioning Provisioning
	Reclaim      Reclaim

	// CacheAffinity lets the placement webhook prefer the nodes that
	// hold the volume's cache (true unless the StorageClass or PV says
	// false).
	CacheAffinity bool

	// Secrets are the credentials from the secret map; never encoded.
	Secrets Secrets
}

// Defaults returns the attributes of an empty parameter map (those of a
// mount are mountspec.Default's), except Provisioning, which Parse derives
// from Bucket (prefix when a bucket is given, bucket otherwise).
func Defaults() Attributes {
	d := mountspec.Default()
	return Attributes{
		Backend:             d.Backend,
		CacheSize:           d.CacheSize,
		CacheBlockSize:      d.CacheBlockSize,
		MetadataTTL:         d.MetadataTTL,
		NegativeMetadataTTL: d.NegativeMetadataTTL,
		ReadAhead:           d.ReadAhead,
		MaxParallelFetches:  d.MaxParallelFetches,
		Prefetch:            d.Prefetch,
		PrefetchBudget:      d.PrefetchBudget,
		UID:                 d.UID,
		GID:                 d.GID,
		FileMode:            d.FileMode,
		DirMode:             d.DirMode,
		OpenMode:            d.OpenMode,
		Reclaim:             DefaultReclaim,
		CacheAffinity:       true,
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

// MountSpec is the spec of a mount of a's bucket and prefix with a's
// settings; the node plugin adds what the volume capability asks for
// (mountspec.Spec.WithOptions, WithMountGroup) and validates it. Every
// attribute that matters to a mount lands here (attributes_test.go holds
// it to that); Warmup is the node plugin's own, Provisioning and Reclaim
// the controller's, CacheAffinity the placement webhook's, Secrets travel beside the spec.
func (a Attributes) MountSpec() mountspec.Spec {
	s := mountspec.Default()
	s.Backend, s.Bucket, s.Prefix = a.Backend, a.Bucket, a.Prefix
	s.Endpoint, s.Region, s.PathStyle, s.Project = a.Endpoint, a.Region, a.PathStyle, a.Project
	s.CacheSize, s.CacheBlockSize = a.CacheSize, a.CacheBlockSize
	s.MetadataTTL, s.NegativeMetadataTTL = a.MetadataTTL, a.NegativeMetadataTTL
	s.ReadAhead, s.MaxParallelFetches = a.ReadAhead, a.MaxParallelFetches
	s.Prefetch, s.PrefetchBudget = a.Prefetch, a.PrefetchBudget
	s.UID, s.GID, s.FileMode, s.DirMode = a.UID, a.GID, a.FileMode, a.DirMode
	s.ReadOnly, s.OpenMode = a.ReadOnly, a.OpenMode
	s.MountOptions = slices.Clone(a.MountOptions)
	if slices.Contains(s.MountOptions, "ro") {
		s.ReadOnly = true
	}
	return s
}

// SourceURL names a's bucket and prefix (mountspec.Spec.SourceURL).
func (a Attributes) SourceURL() string { return a.MountSpec().SourceURL() }

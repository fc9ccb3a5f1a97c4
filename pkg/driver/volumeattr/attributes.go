package volumeattr

import (
	"errors"
	"fmt"
	"time"

	"github.com/basin-csi/basin/pkg/mountspec"
	"github.com/basin-csi/basin/pkg/objstore"
)

// ErrInvalid is wrapped by every error Parse and ParseSecrets return.
var ErrInvalid = errors.New("volumeattr: invalid volume attributes")

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
// The defaults of a mount are mountspec.Default's.
const DefaultReclaim = ReclaimDelete

// Attributes are the typed volume attributes: the mount's settings (the
// embedded mountspec.Spec, the one typed form of a mount setting) and what
// is not a mount setting. The zero value is not valid; start from
// Defaults or Parse.
type Attributes struct {
	// Spec is the mount: where the data is and how it is mounted. Bucket
	// is empty only in StorageClass parameters with provisioning=bucket.
	// The node plugin adds what the volume capability asks for
	// (mountspec.Spec.WithOptions, WithMountGroup) and validates it.
	mountspec.Spec

	// Warmup are the paths inside the volume (relative, without leading
	// or trailing "/"; WarmupAll for the whole volume) the node plugin
	// reads in the background after stage. nil when there are none.
	Warmup []string

	// Provisioning and Reclaim are the controller's: how CreateVolume
	// makes the volume and what DeleteVolume does with its data.
	Provisioning Provisioning
	Reclaim      Reclaim

	// CacheAffinity lets the placement webhook prefer the nodes that
	// hold the volume's cache (true unless the StorageClass or PV says
	// false). Mounts ignore it.
	CacheAffinity bool

	// SharedCacheSize and SharedCacheMaxAge bound the shared cache tier
	// (Spec.SharedCache), kept by the controller: at most this many bytes
	// of tier objects, none unused for longer (each 0: no bound). Mounts
	// ignore them.
	SharedCacheSize   int64
	SharedCacheMaxAge time.Duration

	// Secrets are the credentials from the secret map; they travel beside
	// the spec, never in it, and are never encoded.
	Secrets Secrets
}

// Defaults returns the attributes of an empty parameter map (those of a
// mount are mountspec.Default's), except Provisioning, which Parse derives
// from Bucket (prefix when a bucket is given, bucket otherwise).
func Defaults() Attributes {
	return Attributes{Spec: mountspec.Default(), Reclaim: DefaultReclaim, CacheAffinity: true}
}

// CheckMountable reports whether a names something a node can mount: the
// bucket must be known. StorageClass parameters with provisioning=bucket
// are valid without one; a volume's attributes are not.
func (a Attributes) CheckMountable() error {
	if a.Bucket == "" {
		return fmt.Errorf("%w: %s is not set", ErrInvalid, mountspec.KeyBucket)
	}
	return nil
}

// Credentials are the secret's credentials for objstore; the zero value
// (no credential in the secret) selects the backend's default chain.
func (a Attributes) Credentials() objstore.Credentials { return a.Secrets.Credentials() }

// SharedCacheCredentials are the shared cache tier's credentials (zero:
// the default chain).
func (a Attributes) SharedCacheCredentials() objstore.Credentials {
	return a.Secrets.SharedCacheCredentials()
}

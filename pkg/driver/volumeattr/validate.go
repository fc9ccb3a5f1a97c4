package volumeattr

import (
	"fmt"

	"github.com/basin-csi/basin/pkg/mountspec"
	"github.com/basin-csi/basin/pkg/objstore"
)

// crossCheck reports the problems of provisioning that involve the mount
// settings, after every key parsed (those among the mount settings alone
// are mountspec.ParseAttributes').
func (a *Attributes) crossCheck() []error {
	var errs []error
	bad := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }
	if a.Provisioning == ProvisionPrefix && a.Bucket == "" {
		bad("%s=%s needs %s: the existing bucket the volumes' prefixes are made in", KeyProvisioning, ProvisionPrefix, mountspec.KeyBucket)
	}
	if a.Backend == objstore.BackendFile && a.Provisioning == ProvisionBucket {
		bad("%s=%s: the file backend provisions prefixes (directories) only; set %s to a directory and %s=%s",
			KeyProvisioning, ProvisionBucket, mountspec.KeyBucket, KeyProvisioning, ProvisionPrefix)
	}
	for _, k := range []struct {
		key string
		set bool
	}{{KeySharedCacheSize, a.SharedCacheSize > 0}, {KeySharedCacheMaxAge, a.SharedCacheMaxAge > 0}} {
		if k.set && a.SharedCache == "" {
			bad("%s bounds the shared cache tier and needs %s", k.key, mountspec.KeySharedCache)
		}
	}
	return errs
}

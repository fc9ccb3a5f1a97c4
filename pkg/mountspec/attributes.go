package mountspec

import (
	"fmt"
	"maps"
	"slices"

	"github.com/basin-csi/basin/pkg/objstore"
)

// ParseAttributes reads the mount settings among a volume's attributes
// (StorageClass parameters or PV volumeAttributes) into a Spec that starts
// from Default. It returns the keys that are not mount settings, sorted,
// for the caller to read or refuse. The error reports every problem at
// once, each naming its key and the accepted values, and wraps
// ErrInvalid; the Spec then holds what parsed, for the caller's own
// checks. The Spec may have no bucket (StorageClass parameters of volumes
// that get a bucket each); Validate requires one.
func ParseAttributes(attrs map[string]string) (s Spec, other []string, err error) {
	s = Default()
	byKey := map[string]setting{}
	for _, st := range settings() {
		if st.attribute {
			byKey[st.key] = st
		}
	}
	var errs problems
	bad := map[string]bool{}
	for _, k := range slices.Sorted(maps.Keys(attrs)) {
		st, ok := byKey[k]
		if !ok {
			other = append(other, k)
			continue
		}
		if err := st.parse(&s, attrs[k]); err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", k, err))
			bad[k] = true
		}
	}
	errs = append(errs, s.checkSettings(bad)...)
	errs = append(errs, s.checkAttributes()...)
	if len(errs) > 0 {
		return s, other, errs
	}
	return s, other, nil
}

// Attributes returns the canonical attributes of s's mount settings: every
// setting written out, defaults included, so that a volume keeps the
// configuration it was created with; unset optional ones (bucket, prefix,
// endpoint, region, project, uid, gid, mountOptions) are left out.
// ParseAttributes(s.Attributes()) gives s back for every s it returned.
func (s Spec) Attributes() map[string]string {
	m := map[string]string{}
	for _, st := range settings() {
		if v := st.format(s); st.attribute && v != "" {
			m[st.key] = v
		}
	}
	return m
}

// checkAttributes reports the settings that do not fit together in a
// volume's attributes: a bucket name the backend does not accept, and
// settings the backend does not use.
func (s Spec) checkAttributes() []error {
	var errs []error
	bad := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }
	if s.Bucket != "" {
		if err := checkBucket(s.Backend, s.Bucket); err != nil {
			bad("%s %q: %w", KeyBucket, s.Bucket, err)
		}
	}
	if s.Backend == objstore.BackendFile {
		if s.Endpoint != "" {
			bad("%s: not used by the file backend", KeyEndpoint)
		}
		if s.Region != "" {
			bad("%s: not used by the file backend", KeyRegion)
		}
	}
	if s.PathStyle && s.Backend != objstore.BackendS3 && s.Backend != objstore.BackendOSS {
		bad("%s: only the s3 and oss backends use it", KeyPathStyle)
	}
	if s.Project != "" && s.Backend != objstore.BackendGCS {
		bad("%s: only the gcs backend uses it", KeyProject)
	}
	if s.SharedCacheRegion != "" && s.SharedCache == "" {
		bad("%s: only a volume with %s uses it", KeySharedCacheRegion, KeySharedCache)
	}
	return errs
}

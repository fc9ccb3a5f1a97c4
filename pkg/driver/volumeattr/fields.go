package volumeattr

import (
	"fmt"
	"strconv"
	"time"

	"github.com/basin-csi/basin/pkg/mountspec"
)

// field ties one key that is not a mount setting to its parser and its
// canonical formatter, so Parse and Encode cannot drift apart (the mount
// settings' table is mountspec's).
type field struct {
	key string
	// parse sets the field of a from v; the error says what is wrong
	// without repeating the key (the caller adds it).
	parse func(a *Attributes, v string) error
	// format returns the canonical text, or "" to leave the key out.
	format func(a Attributes) string
}

// fields returns the table of the keys that are not mount settings, in
// Keys order.
func fields() []field {
	return []field{
		{KeyProvisioning, parseProvisioning, func(a Attributes) string { return string(a.Provisioning) }},
		{KeyReclaim, parseReclaim, func(a Attributes) string { return string(a.Reclaim) }},
		{KeyWarmup, parseWarmup, formatWarmup},
		{KeyCacheAffinity, parseCacheAffinity, func(a Attributes) string { return strconv.FormatBool(a.CacheAffinity) }},
		{KeySharedCacheSize, parseSharedCacheSize, func(a Attributes) string { return formatUnlessZero(a.SharedCacheSize, mountspec.FormatSize) }},
		{KeySharedCacheMaxAge, parseSharedCacheMaxAge, func(a Attributes) string {
			return formatUnlessZero(a.SharedCacheMaxAge, time.Duration.String)
		}},
	}
}

// formatUnlessZero formats v, or returns "" (the key left out) for zero.
func formatUnlessZero[T comparable](v T, format func(T) string) string {
	var zero T
	if v == zero {
		return ""
	}
	return format(v)
}

func parseSharedCacheSize(a *Attributes, v string) error {
	n, err := mountspec.ParseSize(v)
	if err != nil {
		return err
	}
	a.SharedCacheSize = n
	return nil
}

// MinSharedCacheMaxAge is the shortest sharedCacheMaxAge: an object in
// use is stored again only once a day (pkg/cache/tier
// Options.RefreshAfter), so its last-modified time is up to a day older
// than its last use.
const MinSharedCacheMaxAge = 48 * time.Hour

func parseSharedCacheMaxAge(a *Attributes, v string) error {
	d, err := time.ParseDuration(v)
	if err != nil || d < 0 || (d > 0 && d < MinSharedCacheMaxAge) {
		return fmt.Errorf("%q: want 0 (no maximum) or a Go duration of at least %s (objects in use are renewed once a day), such as 168h", v, MinSharedCacheMaxAge)
	}
	a.SharedCacheMaxAge = d
	return nil
}

func parseProvisioning(a *Attributes, v string) error {
	switch p := Provisioning(v); p {
	case ProvisionBucket, ProvisionPrefix:
		a.Provisioning = p
		return nil
	}
	return fmt.Errorf("%q is not %q or %q", v, ProvisionBucket, ProvisionPrefix)
}

func parseReclaim(a *Attributes, v string) error {
	switch r := Reclaim(v); r {
	case ReclaimDelete, ReclaimRetain:
		a.Reclaim = r
		return nil
	}
	return fmt.Errorf("%q is not %q or %q", v, ReclaimDelete, ReclaimRetain)
}

func parseCacheAffinity(a *Attributes, v string) error {
	b, err := mountspec.ParseBool(v)
	if err != nil {
		return err
	}
	a.CacheAffinity = b
	return nil
}

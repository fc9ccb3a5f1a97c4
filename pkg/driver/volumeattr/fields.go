package volumeattr

import (
	"fmt"
	"github.com/basin-csi/basin/pkg/mountspec"
	"strconv"
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
	}
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

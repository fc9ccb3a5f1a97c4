package volumeattr

import (
	"fmt"
	"math"
	"os"
	"strconv"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/basin-csi/basin/pkg/mountspec"
	"github.com/basin-csi/basin/pkg/objstore"
)

// field ties one key to its parser and its canonical formatter, so Parse
// and Encode cannot drift apart.
type field struct {
	key string
	// parse sets the field of a from v; the error says what is wrong
	// without repeating the key (the caller adds it).
	parse func(a *Attributes, v string) error
	// format returns the canonical text, or "" to leave the key out.
	format func(a Attributes) string
}

// fields returns the table of every attribute key, in Keys order.
func fields() []field {
	return []field{
		{KeyBackend, parseBackend, func(a Attributes) string { return string(a.Backend) }},
		{KeyBucket, func(a *Attributes, v string) error { a.Bucket = v; return nil }, func(a Attributes) string { return a.Bucket }},
		{KeyPrefix, parsePrefix, func(a Attributes) string { return a.Prefix }},
		{KeyEndpoint, parseEndpointAttr, func(a Attributes) string { return a.Endpoint }},
		{KeyRegion, parseRegionAttr, func(a Attributes) string { return a.Region }},
		boolField(KeyPathStyle, func(a *Attributes) *bool { return &a.PathStyle }),
		{KeyProject, func(a *Attributes, v string) error { a.Project = v; return nil }, func(a Attributes) string { return a.Project }},
		sizeField(KeyCacheSize, func(a *Attributes) *int64 { return &a.CacheSize }, 0, math.MaxInt64-1, 1),
		sizeField(KeyCacheBlockSize, func(a *Attributes) *int64 { return &a.CacheBlockSize }, minBlockSize, maxBlockSize, minBlockSize),
		ttlField(KeyMetadataTTL, func(a *Attributes) *time.Duration { return &a.MetadataTTL }),
		ttlField(KeyNegativeMetadataTTL, func(a *Attributes) *time.Duration { return &a.NegativeMetadataTTL }),
		sizeField(KeyReadAhead, func(a *Attributes) *int64 { return &a.ReadAhead }, 0, math.MaxInt64-1, 1),
		{KeyMaxParallelFetches, parseMaxParallelFetches, func(a Attributes) string { return strconv.Itoa(a.MaxParallelFetches) }},
		boolField(KeyPrefetch, func(a *Attributes) *bool { return &a.Prefetch }),
		sizeField(KeyPrefetchBudget, func(a *Attributes) *int64 { return &a.PrefetchBudget }, 1, math.MaxInt64-1, 1),
		idField(KeyUID, func(a *Attributes) *int64 { return &a.UID }),
		idField(KeyGID, func(a *Attributes) *int64 { return &a.GID }),
		modeField(KeyFileMode, func(a *Attributes) *os.FileMode { return &a.FileMode }),
		modeField(KeyDirMode, func(a *Attributes) *os.FileMode { return &a.DirMode }),
		boolField(KeyReadOnly, func(a *Attributes) *bool { return &a.ReadOnly }),
		{KeyOpenMode, parseOpenMode, func(a Attributes) string { return string(a.OpenMode) }},
		{KeyProvisioning, parseProvisioning, func(a Attributes) string { return string(a.Provisioning) }},
		{KeyReclaim, parseReclaim, func(a Attributes) string { return string(a.Reclaim) }},
		{KeyMountOptions, parseMountOptions, func(a Attributes) string { return strings.Join(a.MountOptions, ",") }},
		{KeyWarmup, parseWarmup, formatWarmup},
		boolField(KeyCacheAffinity, func(a *Attributes) *bool { return &a.CacheAffinity }),
	}
}

func parseBackend(a *Attributes, v string) error {
	for _, b := range objstore.Backends {
		if v == string(b) {
			a.Backend = b
			return nil
		}
	}
	return fmt.Errorf("%q is not one of %v", v, objstore.Backends)
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

func parseOpenMode(a *Attributes, v string) error {
	m := mountspec.OpenMode(v)
	if !m.Valid() {
		return fmt.Errorf("%q: want one of %q", v, mountspec.OpenModes())
	}
	a.OpenMode = m
	return nil
}

func parseMaxParallelFetches(a *Attributes, v string) error {
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 || n > maxParallelFetches {
		return fmt.Errorf("%q: want an integer from 1 to %d", v, maxParallelFetches)
	}
	a.MaxParallelFetches = n
	return nil
}

func parseEndpointAttr(a *Attributes, v string) error {
	if err := checkEndpoint(v); err != nil {
		return fmt.Errorf("%q: %w", v, err)
	}
	a.Endpoint = v
	return nil
}

func parseRegionAttr(a *Attributes, v string) error {
	if err := checkRegion(v); err != nil {
		return fmt.Errorf("%q: %w", v, err)
	}
	a.Region = v
	return nil
}

func parsePrefix(a *Attributes, v string) error {
	p, err := CleanPrefix(v)
	if err != nil {
		return fmt.Errorf("%q: %w", v, err)
	}
	a.Prefix = p
	return nil
}

func parseMountOptions(a *Attributes, v string) error {
	if len(v) > maxMountOptionsLength {
		return fmt.Errorf("longer than %d bytes", maxMountOptionsLength)
	}
	opts, err := mountspec.ParseOptions(strings.Split(v, ","))
	if err != nil {
		return err
	}
	a.MountOptions = opts
	return nil
}

// boolField parses strconv.ParseBool's forms and formats "true"/"false".
func boolField(key string, p func(*Attributes) *bool) field {
	return field{key,
		func(a *Attributes, v string) error {
			b, err := strconv.ParseBool(v)
			if err != nil {
				return fmt.Errorf("%q: want true or false", v)
			}
			*p(a) = b
			return nil
		},
		func(a Attributes) string { return strconv.FormatBool(*p(&a)) },
	}
}

// sizeField parses a Kubernetes quantity into bytes within [lo, hi] and a
// multiple of unit.
func sizeField(key string, p func(*Attributes) *int64, lo, hi, unit int64) field {
	return field{key,
		func(a *Attributes, v string) error {
			n, err := ParseSize(v)
			if err != nil {
				return err
			}
			if n < lo || n > hi || n%unit != 0 {
				return fmt.Errorf("%q: want %s", v, sizeRange(lo, hi, unit))
			}
			*p(a) = n
			return nil
		},
		func(a Attributes) string { return FormatSize(*p(&a)) },
	}
}

// sizeRange describes the accepted sizes for an error message.
func sizeRange(lo, hi, unit int64) string {
	s := fmt.Sprintf("at least %s", FormatSize(lo))
	if hi < math.MaxInt64-1 {
		s = fmt.Sprintf("from %s to %s", FormatSize(lo), FormatSize(hi))
	}
	if unit > 1 {
		s += fmt.Sprintf(", a multiple of %s", FormatSize(unit))
	}
	return s
}

// ParseSize parses a non-negative Kubernetes quantity as bytes, rounding a
// fraction of a byte up as resource.Quantity.Value does.
func ParseSize(v string) (int64, error) {
	q, err := resource.ParseQuantity(v)
	if err != nil {
		return 0, fmt.Errorf("%q is not a Kubernetes quantity (such as 10Gi or 512Mi)", v)
	}
	if q.Sign() < 0 {
		return 0, fmt.Errorf("%q is negative", v)
	}
	// ParseQuantity clamps what overflows to MaxInt64, so that value means "too large".
	if q.Cmp(*resource.NewQuantity(math.MaxInt64, resource.BinarySI)) >= 0 {
		return 0, fmt.Errorf("%q is too large", v)
	}
	return q.Value(), nil
}

// FormatSize renders bytes as the canonical Kubernetes quantity ("10Gi",
// "1500").
func FormatSize(n int64) string {
	return resource.NewQuantity(n, resource.BinarySI).String()
}

// ttlField parses a TTL: a non-negative Go duration, "0" or "-1".
func ttlField(key string, p func(*Attributes) *time.Duration) field {
	return field{key,
		func(a *Attributes, v string) error {
			d, err := ParseTTL(v)
			if err != nil {
				return err
			}
			*p(a) = d
			return nil
		},
		func(a Attributes) string { return FormatTTL(*p(&a)) },
	}
}

// ParseTTL parses a TTL attribute: a Go duration ("90s", "2h"), "0" (do
// not cache) or "-1" (Forever).
func ParseTTL(v string) (time.Duration, error) {
	if v == "-1" {
		return Forever, nil
	}
	d, err := time.ParseDuration(v)
	if err != nil {
		return 0, fmt.Errorf("%q: want a Go duration such as 90s or 2h, 0 (no caching) or -1 (forever)", v)
	}
	if d < 0 {
		return 0, fmt.Errorf("%q: the only negative value is -1 (forever)", v)
	}
	return d, nil
}

// FormatTTL is ParseTTL's inverse.
func FormatTTL(d time.Duration) string {
	switch {
	case d < 0:
		return "-1"
	case d == 0:
		return "0"
	}
	return d.String()
}

// idField parses a uid or gid; -1 (unset) is left out of the encoding.
func idField(key string, p func(*Attributes) *int64) field {
	return field{key,
		func(a *Attributes, v string) error {
			n, err := strconv.ParseInt(v, 10, 64)
			if err != nil || n < 0 || n > maxID {
				return fmt.Errorf("%q: want an integer from 0 to %d", v, int64(maxID))
			}
			*p(a) = n
			return nil
		},
		func(a Attributes) string {
			if n := *p(&a); n >= 0 {
				return strconv.FormatInt(n, 10)
			}
			return ""
		},
	}
}

// modeField parses octal permission bits up to 0777.
func modeField(key string, p func(*Attributes) *os.FileMode) field {
	return field{key,
		func(a *Attributes, v string) error {
			n, err := strconv.ParseUint(v, 8, 32)
			if err != nil || n > uint64(maxModeBits) {
				return fmt.Errorf("%q: want octal permission bits up to 0777, such as 0644", v)
			}
			*p(a) = os.FileMode(n)
			return nil
		},
		func(a Attributes) string { return fmt.Sprintf("%04o", uint32(*p(&a))) },
	}
}

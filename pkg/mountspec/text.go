package mountspec

import (
	"errors"
	"fmt"
	"math"
	"net/url"
	"path"
	"strconv"
	"strings"
	"time"
	"unicode"

	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/basin-csi/basin/pkg/objstore"
)

// Limits of the text forms.
const (
	maxRegionLen = 64
	maxBucketLen = 255 // S3 legacy names; checked per backend
	maxPrefixLen = 512
)

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

// ParseBool reads strconv.ParseBool's forms ("true", "1", "f", ...).
func ParseBool(v string) (bool, error) {
	b, err := strconv.ParseBool(v)
	if err != nil {
		return false, fmt.Errorf("%q: want true or false", v)
	}
	return b, nil
}

// ParseTTL parses a TTL: a Go duration ("90s", "2h"), "0" (do not cache)
// or "-1" (Forever).
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
	switch d {
	case Forever:
		return "-1"
	case 0:
		return "0"
	}
	return d.String()
}

// CleanPrefix normalises a key prefix used as a directory: leading slashes
// dropped, a trailing slash added. It refuses empty, "." and ".." segments
// and control characters. "" stays "".
func CleanPrefix(p string) (string, error) {
	p = strings.TrimLeft(p, "/")
	if p == "" {
		return "", nil
	}
	if len(p) > maxPrefixLen {
		return "", fmt.Errorf("longer than %d bytes", maxPrefixLen)
	}
	if strings.IndexFunc(p, unicode.IsControl) >= 0 {
		return "", errors.New("contains a control character")
	}
	for seg := range strings.SplitSeq(strings.TrimSuffix(p, "/"), "/") {
		switch seg {
		case "":
			return "", errors.New("has an empty path segment")
		case ".", "..":
			return "", fmt.Errorf("has a %q path segment", seg)
		}
	}
	if !strings.HasSuffix(p, "/") {
		p += "/"
	}
	return p, nil
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

// CheckSharedCache accepts http(s)://host[:port]/bucket[/prefix] or
// s3://bucket[/prefix] without credentials, query or fragment; bucket is
// an S3 bucket name.
func CheckSharedCache(v string) error {
	_, _, _, err := splitSharedCache(v)
	return err
}

// splitSharedCache splits a sharedCache URL into the endpoint, the bucket
// and the key prefix ("" or ending in "/"). An s3:// URL names a bucket
// of Amazon S3 itself: the endpoint is "" (the SDK's own endpoints,
// virtual-hosted, S3 Express One Zone directory buckets included).
func splitSharedCache(v string) (endpoint, bucket, prefix string, err error) {
	const want = "want http(s)://host[:port]/bucket[/prefix] (path-style) or s3://bucket[/prefix] (Amazon S3)"
	u, perr := url.Parse(v)
	if perr != nil || u.Host == "" {
		return "", "", "", errors.New(want)
	}
	if u.User != nil {
		return "", "", "", errors.New("credentials do not belong in the URL; put them in the secret")
	}
	if u.RawQuery != "" || u.Fragment != "" {
		return "", "", "", errors.New("no query or fragment allowed")
	}
	rest := strings.TrimPrefix(u.Path, "/")
	switch u.Scheme {
	case "http", "https":
		endpoint = u.Scheme + "://" + u.Host
		bucket, rest, _ = strings.Cut(rest, "/")
	case "s3":
		if u.Port() != "" {
			return "", "", "", errors.New(want)
		}
		bucket = u.Host
	default:
		return "", "", "", errors.New(want)
	}
	if bucket == "" {
		return "", "", "", fmt.Errorf("no bucket: %s", want)
	}
	if err := checkBucket(objstore.BackendS3, bucket); err != nil {
		return "", "", "", fmt.Errorf("bucket %q: %w", bucket, err)
	}
	if rest != "" {
		if prefix, err = CleanPrefix(rest); err != nil {
			return "", "", "", fmt.Errorf("prefix %q: %w", rest, err)
		}
	}
	return endpoint, bucket, prefix, nil
}

// CheckRegion accepts region and location names: lower-case letters,
// digits and dashes.
func CheckRegion(v string) error {
	if v == "" || len(v) > maxRegionLen {
		return fmt.Errorf("want 1 to %d characters", maxRegionLen)
	}
	for _, r := range v {
		if (r < 'a' || r > 'z') && (r < '0' || r > '9') && r != '-' {
			return errors.New("want lower-case letters, digits and dashes")
		}
	}
	return nil
}

// checkBucket checks the bucket name's syntax for the backend. S3 and OSS
// accept legacy names (upper case, underscores) that old us-east-1 buckets
// may still have; GCS names are lower case; file buckets are absolute,
// clean directory paths.
func checkBucket(b objstore.Backend, v string) error {
	if b == objstore.BackendFile {
		if !path.IsAbs(v) || path.Clean(v) != v {
			return errors.New("the file backend wants an absolute, clean directory path")
		}
		if strings.IndexFunc(v, unicode.IsControl) >= 0 {
			return errors.New("contains a control character")
		}
		return nil
	}
	lowerOnly := b == objstore.BackendGCS
	maxLen := maxBucketLen
	if lowerOnly {
		maxLen = 222
	}
	if len(v) < 3 || len(v) > maxLen {
		return fmt.Errorf("want 3 to %d characters", maxLen)
	}
	for i, r := range v {
		ok := r >= 'a' && r <= 'z' || r >= '0' && r <= '9' ||
			!lowerOnly && r >= 'A' && r <= 'Z' ||
			i > 0 && i < len(v)-1 && strings.ContainsRune(".-_", r)
		if !ok {
			return errors.New("want letters, digits, dots, dashes and underscores, starting and ending with a letter or digit")
		}
	}
	return nil
}

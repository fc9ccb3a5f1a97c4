package volumeattr

import (
	"errors"
	"fmt"
	"path"
	"strings"
	"unicode"

	"github.com/basin-csi/basin/pkg/mountspec"
	"github.com/basin-csi/basin/pkg/objstore"
)

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

// checkEndpoint is mountspec.CheckEndpoint.
func checkEndpoint(v string) error { return mountspec.CheckEndpoint(v) }

// checkRegion accepts region and location names: lower-case letters,
// digits and dashes.
func checkRegion(v string) error {
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

// crossCheck reports the problems that involve more than one key, after
// every key parsed. given says which keys the parameters set.
func (a *Attributes) crossCheck(given map[string]bool) []error {
	var errs []error
	bad := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }
	if a.Bucket != "" {
		if err := checkBucket(a.Backend, a.Bucket); err != nil {
			bad("%s %q: %w", KeyBucket, a.Bucket, err)
		}
	}
	if a.Provisioning == ProvisionPrefix && a.Bucket == "" {
		bad("%s=%s needs %s: the existing bucket the volumes' prefixes are made in", KeyProvisioning, ProvisionPrefix, KeyBucket)
	}
	if a.Backend == objstore.BackendFile {
		for _, k := range []string{KeyEndpoint, KeyRegion} {
			if given[k] {
				bad("%s: not used by the file backend", k)
			}
		}
		if a.Provisioning == ProvisionBucket {
			bad("%s=%s: the file backend provisions prefixes (directories) only; set %s to a directory and %s=%s",
				KeyProvisioning, ProvisionBucket, KeyBucket, KeyProvisioning, ProvisionPrefix)
		}
	}
	if a.PathStyle && a.Backend != objstore.BackendS3 && a.Backend != objstore.BackendOSS {
		bad("%s: only the s3 and oss backends use it", KeyPathStyle)
	}
	if a.Project != "" && a.Backend != objstore.BackendGCS {
		bad("%s: only the gcs backend uses it", KeyProject)
	}
	return errs
}

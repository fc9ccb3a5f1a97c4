package driver

import (
	"crypto/sha256"
	"encoding/hex"
	"strings"
)

// bucketNamePrefix starts every bucket the controller creates, so that
// they are recognisable and never start with a reserved prefix ("goog",
// "xn--", "sthree-") or look like an IP address.
const bucketNamePrefix = "basin-"

// Lengths of derived names.
const (
	maxBucketNameLen = 63 // S3, OSS and GCS (without dots)
	maxSegmentLen    = 48 // volume names up to this length are used as is
	hashLen          = 10 // hex digits (40 bits) appended to altered names
)

// bucketName derives the bucket of a provisioning=bucket volume from its
// name: "basin-" + the name in lower case, with runs of anything but
// letters and digits turned into one dash. A name that had to be altered
// or shortened gets a hash of the original name appended, so distinct
// names give distinct buckets. The result is a valid S3, OSS and GCS
// bucket name of at most 63 characters.
func bucketName(volumeName string) string {
	var b strings.Builder
	b.WriteString(bucketNamePrefix)
	dash := true // the prefix ends with one
	for _, r := range strings.ToLower(volumeName) {
		if r >= 'a' && r <= 'z' || r >= '0' && r <= '9' {
			b.WriteRune(r)
			dash = false
		} else if !dash {
			b.WriteByte('-')
			dash = true
		}
	}
	name := strings.TrimRight(b.String(), "-")
	// GCS refuses names containing "google"; S3 refuses the suffixes of
	// its aliases.
	clean := !strings.Contains(name, "google") && !strings.HasSuffix(name, "-s3alias")
	if clean && name == bucketNamePrefix+volumeName && len(name) <= maxBucketNameLen {
		return name
	}
	name = strings.ReplaceAll(name, "google", "g")
	if keep := maxBucketNameLen - 1 - hashLen; len(name) > keep {
		name = strings.TrimRight(name[:keep], "-")
	}
	return name + "-" + nameHash(volumeName)
}

// prefixSegment derives the per-volume path segment of a
// provisioning=prefix volume from its name: the name itself when it is
// short and made of letters, digits, '.', '_' and '-' (starting with a
// letter or digit), otherwise a cleaned, shortened form with a hash of the
// name appended. Volume IDs have to fit in 128 bytes, which is why long
// names are shortened.
func prefixSegment(volumeName string) string {
	safe := func(r rune) bool {
		return r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '.' || r == '_' || r == '-'
	}
	ok := volumeName != "" && len(volumeName) <= maxSegmentLen && strings.IndexFunc(volumeName, func(r rune) bool { return !safe(r) }) < 0
	if ok && safe(rune(volumeName[0])) && volumeName[0] != '.' && volumeName[0] != '_' && volumeName[0] != '-' {
		return volumeName
	}
	clean := strings.Map(func(r rune) rune {
		if safe(r) {
			return r
		}
		return '-'
	}, volumeName)
	clean = strings.TrimLeft(clean, "._-")
	if keep := maxSegmentLen - 1 - hashLen; len(clean) > keep {
		clean = clean[:keep]
	}
	if clean == "" {
		return "v-" + nameHash(volumeName)
	}
	return clean + "-" + nameHash(volumeName)
}

// nameHash is a short hex digest of a volume name.
func nameHash(s string) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:])[:hashLen]
}

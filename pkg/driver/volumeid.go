package driver

import (
	"crypto/sha256"
	"encoding/base32"
	"errors"
	"fmt"
	"net/url"
	"strings"

	"github.com/basin-csi/basin/pkg/driver/volumeattr"
	"github.com/basin-csi/basin/pkg/mountspec"
	"github.com/basin-csi/basin/pkg/objstore"
)

// maxVolumeIDLen is the CSI limit on volume IDs.
const maxVolumeIDLen = 128

// errMalformedID says a string is not a Basin volume ID. Callers decide
// what that means: success for DeleteVolume, NotFound elsewhere.
var errMalformedID = errors.New("driver: not a Basin volume ID")

// volumeID is what a volume ID says about its volume. Its text form is
//
//	<backend>/<flags>/<region>/<endpoint fingerprint>/<bucket>/<prefix>
//
// for example "s3/1pds/us-east-1/k7dqa2mb/datasets/team-a/pvc-1f0c.../".
// flags is the format version "1", then "b" (provisioning=bucket) or "p"
// (prefix), "d" (reclaim=delete) or "r" (retain), and "s" for path-style
// addressing. region and the fingerprint may be empty. The bucket is
// path-escaped (file buckets are directories); the prefix is the rest of
// the ID, empty in bucket mode and ending in "/" in prefix mode. The
// format never holds a secret.
type volumeID struct {
	Backend      objstore.Backend
	Provisioning volumeattr.Provisioning
	Reclaim      volumeattr.Reclaim
	PathStyle    bool
	Region       string
	// EndpointFP is endpointFingerprint(endpoint); "" for the backend's
	// default endpoint.
	EndpointFP string
	Bucket     string
	Prefix     string
}

// String is the ID's text form.
func (v volumeID) String() string {
	flags := "1"
	if v.Provisioning == volumeattr.ProvisionBucket {
		flags += "b"
	} else {
		flags += "p"
	}
	if v.Reclaim == volumeattr.ReclaimRetain {
		flags += "r"
	} else {
		flags += "d"
	}
	if v.PathStyle {
		flags += "s"
	}
	return strings.Join([]string{string(v.Backend), flags, v.Region, v.EndpointFP, url.PathEscape(v.Bucket), v.Prefix}, "/")
}

// parseVolumeID is String's inverse. Anything String could not have
// produced is errMalformedID.
func parseVolumeID(s string) (volumeID, error) {
	bad := func(why string) (volumeID, error) {
		return volumeID{}, fmt.Errorf("%w (%s): %q", errMalformedID, why, s)
	}
	if len(s) > maxVolumeIDLen {
		return bad("too long")
	}
	parts := strings.SplitN(s, "/", 6)
	if len(parts) != 6 {
		return bad("too few fields")
	}
	var v volumeID
	v.Backend = objstore.Backend(parts[0])
	switch v.Backend {
	case objstore.BackendS3, objstore.BackendOSS, objstore.BackendGCS, objstore.BackendFile:
	default:
		return bad("unknown backend")
	}
	switch flags := parts[1]; {
	case len(flags) < 3 || len(flags) > 4 || flags[0] != '1':
		return bad("unknown format")
	default:
		v.Provisioning = map[byte]volumeattr.Provisioning{'b': volumeattr.ProvisionBucket, 'p': volumeattr.ProvisionPrefix}[flags[1]]
		v.Reclaim = map[byte]volumeattr.Reclaim{'d': volumeattr.ReclaimDelete, 'r': volumeattr.ReclaimRetain}[flags[2]]
		v.PathStyle = len(flags) == 4 && flags[3] == 's'
		if v.Provisioning == "" || v.Reclaim == "" || len(flags) == 4 && !v.PathStyle {
			return bad("unknown flags")
		}
	}
	v.Region, v.EndpointFP = parts[2], parts[3]
	bucket, err := url.PathUnescape(parts[4])
	if err != nil || bucket == "" {
		return bad("bad bucket")
	}
	v.Bucket, v.Prefix = bucket, parts[5]
	switch v.Provisioning {
	case volumeattr.ProvisionBucket:
		if v.Prefix != "" {
			return bad("prefix in bucket mode")
		}
	case volumeattr.ProvisionPrefix:
		if p, err := mountspec.CleanPrefix(v.Prefix); err != nil || p == "" || p != v.Prefix {
			return bad("bad prefix")
		}
	}
	if v.String() != s {
		return bad("not canonical")
	}
	return v, nil
}

// fpEncoding writes fingerprints in lower case without padding.
var fpEncoding = base32.NewEncoding("abcdefghijklmnopqrstuvwxyz234567").WithPadding(base32.NoPadding)

// endpointFingerprint is a short digest of an endpoint URL (40 bits), ""
// for the empty (default) endpoint. It lets DeleteVolume check that the
// endpoint it got from the secret is the one the volume was created in,
// without putting the URL in the length-limited ID.
func endpointFingerprint(endpoint string) string {
	if endpoint == "" {
		return ""
	}
	sum := sha256.Sum256([]byte(endpoint))
	return fpEncoding.EncodeToString(sum[:5])
}

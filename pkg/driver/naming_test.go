package driver

import (
	"regexp"
	"strings"
	"testing"
)

// validBucket is the intersection of the S3, OSS and GCS rules for names
// without dots: 3-63 lower-case letters, digits and dashes, starting and
// ending with a letter or digit.
var validBucket = regexp.MustCompile(`^[a-z0-9][a-z0-9-]{1,61}[a-z0-9]$`)

func TestBucketName(t *testing.T) {
	names := []string{
		"pvc-3f2a9c1e-0b6d-4a57-9a0c-5b8e6f1d2c3a", "PVC-Upper", "pvc-upper", "a", "", "---", "x_y.z",
		"google-data", "my-s3alias", strings.Repeat("long-name-", 20), strings.Repeat("long-name-", 20) + "x",
		"sanity-controller-create-maxlen-" + strings.Repeat("A", 96), "ünïcödé", "a--b", "xn--abc",
	}
	seen := map[string]string{}
	for _, n := range names {
		b := bucketName(n)
		if !validBucket.MatchString(b) || strings.Contains(b, "--") || strings.Contains(b, "google") ||
			strings.HasSuffix(b, "-s3alias") || !strings.HasPrefix(b, bucketNamePrefix) {
			t.Errorf("bucketName(%q) = %q: not a valid bucket name", n, b)
		}
		if b != bucketName(n) {
			t.Errorf("bucketName(%q) is not deterministic", n)
		}
		if other, ok := seen[b]; ok {
			t.Errorf("bucketName(%q) = bucketName(%q) = %q", n, other, b)
		}
		seen[b] = n
	}
	if got := bucketName("pvc-3f2a9c1e-0b6d-4a57-9a0c-5b8e6f1d2c3a"); got != "basin-pvc-3f2a9c1e-0b6d-4a57-9a0c-5b8e6f1d2c3a" {
		t.Errorf("a Kubernetes PV name should be kept readable, got %q", got)
	}
}

func TestPrefixSegment(t *testing.T) {
	seen := map[string]string{}
	for i, n := range []string{
		"pvc-3f2a9c1e-0b6d-4a57-9a0c-5b8e6f1d2c3a", "Vol_1.a", ".hidden", ".basin-dir", "..", ".", "a/b", "a b", "",
		strings.Repeat("n", 128), strings.Repeat("n", 127), "ünïcödé", "-x", "_x",
	} {
		s := prefixSegment(n)
		if s == "" || s == "." || s == ".." || strings.ContainsAny(s, "/ ") || len(s) > maxSegmentLen ||
			strings.HasPrefix(s, ".") || strings.HasPrefix(s, "-") || strings.HasPrefix(s, "_") {
			t.Errorf("case %d: prefixSegment(%q) = %q", i, n, s)
		}
		if other, ok := seen[s]; ok {
			t.Errorf("prefixSegment(%q) = prefixSegment(%q) = %q", n, other, s)
		}
		seen[s] = n
	}
	if got := prefixSegment("pvc-1"); got != "pvc-1" {
		t.Errorf("prefixSegment(pvc-1) = %q", got)
	}
}

// Every derived name keeps the volume ID within the CSI limit, for the
// longest names csi-sanity uses (128 characters) and a parent bucket and
// prefix of ordinary length.
func TestDerivedIDsFit(t *testing.T) {
	long := strings.Repeat("z", 128)
	for _, v := range []volumeID{
		{Backend: "s3", Provisioning: "bucket", Reclaim: "delete", PathStyle: true, Region: "ap-southeast-1", EndpointFP: endpointFingerprint("x"), Bucket: bucketName(long)},
		{Backend: "s3", Provisioning: "prefix", Reclaim: "delete", PathStyle: true, Region: "ap-southeast-1", EndpointFP: endpointFingerprint("x"),
			Bucket: strings.Repeat("b", 30), Prefix: "checkpoints/" + prefixSegment(long) + "/"},
	} {
		if n := len(v.String()); n > maxVolumeIDLen {
			t.Errorf("%s is %d bytes", v, n)
		}
	}
}

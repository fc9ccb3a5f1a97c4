package driver

import (
	"errors"
	"strings"
	"testing"

	"github.com/basin-csi/basin/pkg/driver/volumeattr"
	"github.com/basin-csi/basin/pkg/objstore"
)

func TestVolumeIDRoundTrip(t *testing.T) {
	cases := []volumeID{
		{Backend: objstore.BackendS3, Provisioning: volumeattr.ProvisionBucket, Reclaim: volumeattr.ReclaimDelete, Region: "us-east-1", Bucket: "basin-pvc-1"},
		{Backend: objstore.BackendS3, Provisioning: volumeattr.ProvisionPrefix, Reclaim: volumeattr.ReclaimRetain, PathStyle: true,
			EndpointFP: endpointFingerprint("http://127.0.0.1:9000"), Bucket: "data", Prefix: "team/a/pvc-1/"},
		{Backend: objstore.BackendOSS, Provisioning: volumeattr.ProvisionBucket, Reclaim: volumeattr.ReclaimRetain, Region: "oss-cn-hangzhou", Bucket: "b12"},
		{Backend: objstore.BackendGCS, Provisioning: volumeattr.ProvisionPrefix, Reclaim: volumeattr.ReclaimDelete, Bucket: "g.example.com", Prefix: "x y/é/"},
		{Backend: objstore.BackendFile, Provisioning: volumeattr.ProvisionPrefix, Reclaim: volumeattr.ReclaimDelete, Bucket: "/srv/data dir/%x", Prefix: "v/"},
	}
	for _, v := range cases {
		s := v.String()
		got, err := parseVolumeID(s)
		if err != nil {
			t.Errorf("parseVolumeID(%q): %v", s, err)
			continue
		}
		if got != v {
			t.Errorf("parseVolumeID(%q) = %+v; want %+v", s, got, v)
		}
		if strings.Count(s, "/") < 5 {
			t.Errorf("%q has too few separators", s)
		}
	}
}

func TestVolumeIDMalformed(t *testing.T) {
	for _, s := range []string{
		"", "fake-vol-id", "pvc-123", "s3/1bd/r/fp/bucket", // too few fields
		"ftp/1bd///b12/", "s3/2bd///b12/", "s3/1xd///b12/", "s3/1bx///b12/", "s3/1bdx///b12/", "s3/1bds5///b12/",
		"s3/1bd/////",                                // empty bucket
		"s3/1bd///b12/prefix/",                       // prefix in bucket mode
		"s3/1pd///b12/",                              // no prefix in prefix mode
		"s3/1pd///b12/a",                             // prefix without trailing slash
		"s3/1pd///b12/a//b/",                         // empty segment
		"s3/1pd///b12/../",                           // dot-dot
		"s3/1pd///b%2zz/a/",                          // bad escape
		"file/1pd///%2Fsrv/a/",                       // not canonical: "/" must stay escaped... (here it is, so check the next)
		"s3/1pd///b%31/a/",                           // escaped letter: not canonical
		"s3/1bd///" + strings.Repeat("b", 130) + "/", // too long
	} {
		v, err := parseVolumeID(s)
		if s == "file/1pd///%2Fsrv/a/" {
			if err != nil || v.Bucket != "/srv" {
				t.Errorf("parseVolumeID(%q) = %+v, %v", s, v, err)
			}
			continue
		}
		if !errors.Is(err, errMalformedID) {
			t.Errorf("parseVolumeID(%q) = %+v, %v; want errMalformedID", s, v, err)
		}
	}
}

func TestEndpointFingerprint(t *testing.T) {
	if endpointFingerprint("") != "" {
		t.Error("the default endpoint has a fingerprint")
	}
	a, b := endpointFingerprint("http://127.0.0.1:9000"), endpointFingerprint("http://127.0.0.1:9001")
	if a == b || len(a) != 8 || a != endpointFingerprint("http://127.0.0.1:9000") {
		t.Errorf("fingerprints %q %q: want 8 stable, distinct characters", a, b)
	}
	if strings.ContainsAny(a, "/=") {
		t.Errorf("fingerprint %q has a separator", a)
	}
}

// FuzzVolumeID: parseVolumeID never panics, and whatever it accepts
// prints back as the same string.
func FuzzVolumeID(f *testing.F) {
	f.Add("s3/1pds/us-east-1/abcdefgh/bucket/a/b/")
	f.Add("file/1pd///%2Fsrv%2Fd/pvc-1/")
	f.Add("gcs/1br///b12/")
	f.Fuzz(func(t *testing.T, s string) {
		v, err := parseVolumeID(s)
		if err != nil {
			if !errors.Is(err, errMalformedID) {
				t.Fatalf("error %v does not wrap errMalformedID", err)
			}
			return
		}
		if v.String() != s || len(s) > maxVolumeIDLen {
			t.Fatalf("parseVolumeID(%q) = %+v, which prints as %q", s, v, v.String())
		}
	})
}

package main

import (
	"testing"

	"github.com/basin-csi/basin/pkg/objstore"
)

func TestParseSource(t *testing.T) {
	for _, tc := range []struct {
		in      string
		want    source
		wantErr bool
	}{
		{"s3://bucket", source{Backend: objstore.BackendS3, Bucket: "bucket"}, false},
		{"s3://bucket/", source{Backend: objstore.BackendS3, Bucket: "bucket"}, false},
		{"s3://bucket/a/b", source{Backend: objstore.BackendS3, Bucket: "bucket", Prefix: "a/b/"}, false},
		{"s3://bucket/a/b/", source{Backend: objstore.BackendS3, Bucket: "bucket", Prefix: "a/b/"}, false},
		{"oss://b/p", source{Backend: objstore.BackendOSS, Bucket: "b", Prefix: "p/"}, false},
		{"gs://b/p", source{Backend: objstore.BackendGCS, Bucket: "b", Prefix: "p/"}, false},
		{"file:///data/set", source{Backend: objstore.BackendFile, Bucket: "/data/set"}, false},
		{"file:///data/set/../x/", source{Backend: objstore.BackendFile, Bucket: "/data/x"}, false},
		{"file://host/data", source{}, true},
		{"file:relative", source{}, true},
		{"s3://", source{}, true},
		{"s3://key:secret@bucket/p", source{}, true},
		{"s3://bucket/p?versionId=1", source{}, true},
		{"s3://bucket/a//b", source{}, true},
		{"http://bucket", source{}, true},
		{"bucket", source{}, true},
		{"", source{}, true},
	} {
		t.Run(tc.in, func(t *testing.T) {
			got, err := parseSource(tc.in)
			if (err != nil) != tc.wantErr {
				t.Fatalf("parseSource(%q) error %v, wantErr %v", tc.in, err, tc.wantErr)
			}
			if got != tc.want {
				t.Errorf("parseSource(%q) = %+v, want %+v", tc.in, got, tc.want)
			}
			if err == nil {
				again, err := parseSource(got.String())
				if err != nil || again != got {
					t.Errorf("String() %q does not parse back: %+v, %v", got.String(), again, err)
				}
			}
		})
	}
}

func FuzzParseSource(f *testing.F) {
	for _, s := range []string{"s3://b/p", "gs://b", "file:///x", "oss://b/a/b/", "s3://u:p@b"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		src, err := parseSource(s)
		if err != nil {
			return
		}
		if src.Bucket == "" {
			t.Fatalf("parseSource(%q) accepted an empty bucket", s)
		}
		again, err := parseSource(src.String())
		if err != nil || again != src {
			t.Fatalf("%q: String %q parses to %+v, %v", s, src.String(), again, err)
		}
	})
}

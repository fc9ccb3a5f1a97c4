package s3store

import (
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/basin-csi/basin/pkg/objstore"
)

// recorder is an HTTP client that keeps the request and answers 200.
type recorder struct{ req *http.Request }

func (r *recorder) Do(req *http.Request) (*http.Response, error) {
	r.req = req
	if req.Body != nil {
		_, _ = io.Copy(io.Discard, req.Body) // a trailing checksum needs the body read
	}
	return &http.Response{StatusCode: http.StatusOK, Header: http.Header{"Etag": {`"e"`}}, Body: http.NoBody, Request: req}, nil
}

// TestAddressing: the URL and signing scope the SDK builds for each
// backend's defaults (OSS cannot be reached from here, so its wiring is
// checked on the request itself).
func TestAddressing(t *testing.T) {
	cases := []struct {
		name      string
		cfg       objstore.Config
		wantURL   string
		wantScope string
		// wantCRC: PutObject carries the SDK's flexible checksum (Amazon
		// only; other stores get checksums only where required).
		wantCRC bool
	}{
		{"oss default", objstore.Config{Backend: objstore.BackendOSS, Bucket: "data", Region: "cn-hangzhou"},
			"https://data.s3.oss-cn-hangzhou.aliyuncs.com/dir/k%20y", "/cn-hangzhou/s3/aws4_request", false},
		{"oss path style", objstore.Config{Backend: objstore.BackendOSS, Bucket: "data", Region: "oss-cn-shanghai", PathStyle: true},
			"https://s3.oss-cn-shanghai.aliyuncs.com/data/dir/k%20y", "/cn-shanghai/s3/aws4_request", false},
		{"s3 endpoint path style", objstore.Config{Backend: objstore.BackendS3, Bucket: "data", Region: "us-east-1", Endpoint: "http://127.0.0.1:9000", PathStyle: true},
			"http://127.0.0.1:9000/data/dir/k%20y", "/us-east-1/s3/aws4_request", false},
		{"aws", objstore.Config{Backend: objstore.BackendS3, Bucket: "data", Region: "eu-west-1"},
			"https://data.s3.eu-west-1.amazonaws.com/dir/k%20y", "/eu-west-1/s3/aws4_request", true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s, err := New(t.Context(), c.cfg, objstore.Credentials{AccessKeyID: "id", SecretAccessKey: "secret"})
			if err != nil {
				t.Fatal(err)
			}
			defer func() { _ = s.Close() }()
			rec := &recorder{}
			_, err = s.c.s3.HeadObject(t.Context(), &s3.HeadObjectInput{Bucket: aws.String("data"), Key: aws.String("dir/k y")},
				func(o *s3.Options) { o.HTTPClient = rec })
			if err != nil {
				t.Fatal(err)
			}
			u := *rec.req.URL
			u.RawQuery = ""
			if got := u.String(); got != c.wantURL {
				t.Errorf("URL %s, want %s", got, c.wantURL)
			}
			if auth := rec.req.Header.Get("Authorization"); !strings.Contains(auth, c.wantScope) {
				t.Errorf("Authorization %q lacks scope %s", auth, c.wantScope)
			}

			_, err = s.c.s3.PutObject(t.Context(), &s3.PutObjectInput{Bucket: aws.String("data"), Key: aws.String("k"), Body: strings.NewReader("body")},
				func(o *s3.Options) { o.HTTPClient = rec })
			if err != nil {
				t.Fatal(err)
			}
			h := rec.req.Header
			hasCRC := h.Get("X-Amz-Checksum-Crc32") != "" || h.Get("X-Amz-Trailer") != ""
			if hasCRC != c.wantCRC || strings.Contains(h.Get("Content-Encoding"), "aws-chunked") && !c.wantCRC {
				t.Errorf("PutObject checksum headers %v, want flexible checksum %v", h, c.wantCRC)
			}
		})
	}
}

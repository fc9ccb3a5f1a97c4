package s3store

import (
	"errors"
	"testing"

	"github.com/basin-csi/basin/pkg/objstore"
)

func TestResolveConfig(t *testing.T) {
	keys := objstore.Credentials{AccessKeyID: "id", SecretAccessKey: "secret"}
	cases := []struct {
		name       string
		cfg        objstore.Config
		creds      objstore.Credentials
		needBucket bool
		wantErr    bool
		endpoint   string // want, when no error
		region     string
	}{
		{name: "s3 defaults", cfg: objstore.Config{Backend: objstore.BackendS3, Bucket: "b"}, needBucket: true},
		{name: "s3 default chain", cfg: objstore.Config{Backend: objstore.BackendS3, Bucket: "b", Region: "eu-west-1"}, needBucket: true, region: "eu-west-1"},
		{name: "s3 endpoint", cfg: objstore.Config{Backend: objstore.BackendS3, Bucket: "b", Endpoint: "http://127.0.0.1:9000"}, creds: keys, needBucket: true, endpoint: "http://127.0.0.1:9000"},
		{name: "oss default endpoint", cfg: objstore.Config{Backend: objstore.BackendOSS, Bucket: "b", Region: "cn-hangzhou"}, needBucket: true,
			endpoint: "https://s3.oss-cn-hangzhou.aliyuncs.com", region: "cn-hangzhou"},
		{name: "oss region with prefix", cfg: objstore.Config{Backend: objstore.BackendOSS, Bucket: "b", Region: "oss-eu-central-1"}, needBucket: true,
			endpoint: "https://s3.oss-eu-central-1.aliyuncs.com", region: "eu-central-1"},
		{name: "oss own endpoint", cfg: objstore.Config{Backend: objstore.BackendOSS, Bucket: "b", Region: "cn-beijing", Endpoint: "https://oss-cn-beijing-internal.aliyuncs.com"}, needBucket: true,
			endpoint: "https://oss-cn-beijing-internal.aliyuncs.com", region: "cn-beijing"},
		{name: "admin without bucket", cfg: objstore.Config{Backend: objstore.BackendS3}},
		{name: "oss without region", cfg: objstore.Config{Backend: objstore.BackendOSS, Bucket: "b"}, needBucket: true, wantErr: true},
		{name: "no bucket", cfg: objstore.Config{Backend: objstore.BackendS3}, needBucket: true, wantErr: true},
		{name: "gcs backend", cfg: objstore.Config{Backend: objstore.BackendGCS, Bucket: "b"}, needBucket: true, wantErr: true},
		{name: "admin gcs backend", cfg: objstore.Config{Backend: objstore.BackendGCS}, wantErr: true},
		{name: "endpoint without scheme", cfg: objstore.Config{Backend: objstore.BackendS3, Bucket: "b", Endpoint: "127.0.0.1:9000"}, needBucket: true, wantErr: true},
		{name: "negative part size", cfg: objstore.Config{Backend: objstore.BackendS3, PartSize: -1}, wantErr: true},
		{name: "secret without key id", cfg: objstore.Config{Backend: objstore.BackendS3, Bucket: "b"}, creds: objstore.Credentials{SecretAccessKey: "s"}, needBucket: true, wantErr: true},
		{name: "gcs key for s3", cfg: objstore.Config{Backend: objstore.BackendS3, Bucket: "b"}, creds: objstore.Credentials{GCSCredentialsJSON: []byte("{}")}, needBucket: true, wantErr: true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, err := resolveConfig(c.cfg, c.creds, c.needBucket)
			if c.wantErr {
				if !errors.Is(err, objstore.ErrInvalidConfig) {
					t.Fatalf("err = %v, want ErrInvalidConfig", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got.Endpoint != c.endpoint || got.Region != c.region {
				t.Errorf("endpoint %q region %q, want %q %q", got.Endpoint, got.Region, c.endpoint, c.region)
			}
			if got.RequestTimeout != objstore.DefaultRequestTimeout || got.MaxAttempts != objstore.DefaultMaxAttempts {
				t.Errorf("defaults not applied: %+v", got)
			}
		})
	}
}

func TestIsAWS(t *testing.T) {
	cases := []struct {
		cfg  objstore.Config
		want bool
	}{
		{objstore.Config{Backend: objstore.BackendS3}, true},
		{objstore.Config{Backend: objstore.BackendS3, Endpoint: "https://s3.eu-west-1.amazonaws.com"}, true},
		{objstore.Config{Backend: objstore.BackendS3, Endpoint: "https://s3.cn-north-1.amazonaws.com.cn"}, true},
		{objstore.Config{Backend: objstore.BackendS3, Endpoint: "http://127.0.0.1:9000"}, false},
		{objstore.Config{Backend: objstore.BackendS3, Endpoint: "https://amazonaws.com.evil.example"}, false},
		{objstore.Config{Backend: objstore.BackendOSS}, false},
	}
	for _, c := range cases {
		if got := isAWS(c.cfg); got != c.want {
			t.Errorf("isAWS(%+v) = %v, want %v", c.cfg, got, c.want)
		}
	}
}

// TestNewRegion: the region comes from the Config, else the SDK's sources,
// else us-east-1.
func TestNewRegion(t *testing.T) {
	t.Setenv("AWS_CONFIG_FILE", "/nonexistent")
	t.Setenv("AWS_SHARED_CREDENTIALS_FILE", "/nonexistent")
	cases := []struct{ name, cfgRegion, env, want string }{
		{"config", "ap-south-1", "eu-west-3", "ap-south-1"},
		{"environment", "", "eu-west-3", "eu-west-3"},
		{"default", "", "", "us-east-1"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Setenv("AWS_REGION", c.env)
			t.Setenv("AWS_DEFAULT_REGION", "")
			s, err := New(t.Context(), objstore.Config{Backend: objstore.BackendS3, Bucket: "b", Region: c.cfgRegion}, objstore.Credentials{})
			if err != nil {
				t.Fatal(err)
			}
			defer func() { _ = s.Close() }()
			if got := s.c.s3.Options().Region; got != c.want {
				t.Errorf("region %q, want %q", got, c.want)
			}
		})
	}
}

func TestCopySource(t *testing.T) {
	cases := []struct{ key, want string }{
		{"plain/key.txt", "b/plain/key.txt"},
		{"with space+plus", "b/with%20space%2Bplus"},
		{"100%/a?b#c&d=e", "b/100%25/a%3Fb%23c%26d%3De"},
		{"ü/日", "b/%C3%BC/%E6%97%A5"},
		{"~_.-", "b/~_.-"},
	}
	for _, c := range cases {
		if got := copySource("b", c.key); got != c.want {
			t.Errorf("copySource(%q) = %q, want %q", c.key, got, c.want)
		}
	}
}

func TestByteRangeAndContentRange(t *testing.T) {
	for _, c := range []struct {
		off, n int64
		want   string
	}{
		{0, 10, "bytes=0-9"}, {5, -1, "bytes=5-"}, {7, 1, "bytes=7-7"}, {1, 1<<63 - 1, "bytes=1-"},
	} {
		if got := byteRange(c.off, c.n); got != c.want {
			t.Errorf("byteRange(%d, %d) = %q, want %q", c.off, c.n, got, c.want)
		}
	}
	for _, c := range []struct {
		in   string
		want int64
		ok   bool
	}{
		{"bytes 0-99/1000", 1000, true}, {"bytes 5-5/6", 6, true}, {"bytes 0-9/*", 0, false}, {"garbage", 0, false},
	} {
		if got, ok := rangeTotal(c.in); got != c.want || ok != c.ok {
			t.Errorf("rangeTotal(%q) = %d, %v; want %d, %v", c.in, got, ok, c.want, c.ok)
		}
	}
}

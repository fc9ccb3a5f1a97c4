package mountspec

import (
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/basin-csi/basin/internal/mountdefaults"
	"github.com/basin-csi/basin/pkg/objstore"
)

func TestParseAttributesValues(t *testing.T) {
	cases := []struct {
		name  string
		attrs map[string]string
		check func(Spec) bool
	}{
		{"defaults", map[string]string{}, func(s Spec) bool { return reflect.DeepEqual(s, Default()) }},
		{"quantity Gi", map[string]string{KeyCacheSize: "20Gi"}, func(s Spec) bool { return s.CacheSize == 20<<30 }},
		{"quantity decimal", map[string]string{KeyCacheSize: "1.5G"}, func(s Spec) bool { return s.CacheSize == 1_500_000_000 }},
		{"quantity exponent", map[string]string{KeyReadAhead: "1e6"}, func(s Spec) bool { return s.ReadAhead == 1_000_000 }},
		{"quantity zero", map[string]string{KeyReadAhead: "0"}, func(s Spec) bool { return s.ReadAhead == 0 }},
		{"block size", map[string]string{KeyCacheBlockSize: "8Mi"}, func(s Spec) bool { return s.CacheBlockSize == 8<<20 }},
		{"ttl duration", map[string]string{KeyMetadataTTL: "90s"}, func(s Spec) bool { return s.MetadataTTL == 90*time.Second }},
		{"ttl zero", map[string]string{KeyMetadataTTL: "0"}, func(s Spec) bool { return s.MetadataTTL == 0 }},
		{"ttl forever", map[string]string{KeyNegativeMetadataTTL: "-1"}, func(s Spec) bool { return s.NegativeMetadataTTL == Forever }},
		{"uid gid", map[string]string{KeyUID: "1000", KeyGID: "0"}, func(s Spec) bool { return s.UID == 1000 && s.GID == 0 }},
		{"modes", map[string]string{KeyFileMode: "0600", KeyDirMode: "750"}, func(s Spec) bool { return s.FileMode == 0o600 && s.DirMode == 0o750 }},
		{"bools", map[string]string{KeyReadOnly: "True", KeyPathStyle: "1", KeyRcloneLinks: "true"}, func(s Spec) bool { return s.ReadOnly && s.PathStyle && s.RcloneLinks }},
		{"rcloneLinks default", map[string]string{}, func(s Spec) bool { return !s.RcloneLinks }},
		{"open mode", map[string]string{KeyOpenMode: "kernel", KeyReadOnly: "true"}, func(s Spec) bool { return s.OpenMode == mountdefaults.OpenKernel }},
		{"open mode default", map[string]string{}, func(s Spec) bool { return s.OpenMode == mountdefaults.OpenServer }},
		{"upload mode", map[string]string{KeyUploadMode: "async"}, func(s Spec) bool { return s.UploadMode == mountdefaults.UploadAsync }},
		{"upload mode default", map[string]string{}, func(s Spec) bool { return s.UploadMode == mountdefaults.UploadSync }},
		{"prefix normalised", map[string]string{KeyBucket: "b12", KeyPrefix: "/a/b"}, func(s Spec) bool { return s.Prefix == "a/b/" }},
		{"mount options", map[string]string{KeyMountOptions: " noexec, noatime,,noexec"}, func(s Spec) bool {
			return reflect.DeepEqual(s.MountOptions, []string{"noexec", "noatime"})
		}},
		{"empty mount options", map[string]string{KeyMountOptions: ""}, func(s Spec) bool { return s.MountOptions == nil }},
		{"ro option reads only", map[string]string{KeyMountOptions: "ro,noexec"}, func(s Spec) bool {
			f := s.Flags()
			return !s.ReadOnly && f.ReadOnly && f.NoExec && !f.NoAtime // readOnly stays as written: Attributes gives it back
		}},
		{"prefetch default", map[string]string{}, func(s Spec) bool { return s.Prefetch && s.PrefetchBudget == 4<<30 }},
		{"prefetch off", map[string]string{KeyPrefetch: "false"}, func(s Spec) bool { return !s.Prefetch }},
		{"prefetch budget", map[string]string{KeyPrefetchBudget: "512Mi"}, func(s Spec) bool { return s.PrefetchBudget == 512<<20 }},
		{"buffer size default", map[string]string{}, func(s Spec) bool { return s.BufferSize == 128<<20 }},
		{"buffer size", map[string]string{KeyBufferSize: "1Gi"}, func(s Spec) bool { return s.BufferSize == 1<<30 }},
		{"gcs project", map[string]string{KeyBackend: "gcs", KeyProject: "p-1"}, func(s Spec) bool { return s.Backend == objstore.BackendGCS && s.Project == "p-1" }},
		{"file dir", map[string]string{KeyBackend: "file", KeyBucket: "/srv/data"}, func(s Spec) bool { return s.Bucket == "/srv/data" }},
		{"shared cache", map[string]string{KeySharedCache: "http://127.0.0.1:9000/tier/team-a"}, func(s Spec) bool {
			cfg, prefix, ok := s.SharedCacheConfig()
			return ok && cfg.Endpoint == "http://127.0.0.1:9000" && cfg.Bucket == "tier" && prefix == "team-a/" && cfg.PathStyle && cfg.MaxAttempts == 1
		}},
		{"no shared cache", map[string]string{}, func(s Spec) bool { _, _, ok := s.SharedCacheConfig(); return !ok }},
		{"shared cache on Amazon S3", map[string]string{KeySharedCache: "s3://tier-1/team-a", KeyRegion: "eu-west-1"}, func(s Spec) bool {
			cfg, prefix, ok := s.SharedCacheConfig()
			return ok && cfg.Endpoint == "" && cfg.Bucket == "tier-1" && prefix == "team-a/" && !cfg.PathStyle && cfg.Region == "eu-west-1"
		}},
		{"shared cache in S3 Express One Zone", map[string]string{KeySharedCache: "s3://tier--usw2-az1--x-s3", KeySharedCacheRegion: "us-west-2", KeyBackend: "gcs"}, func(s Spec) bool {
			cfg, prefix, ok := s.SharedCacheConfig()
			return ok && cfg.Bucket == "tier--usw2-az1--x-s3" && prefix == "" && !cfg.PathStyle && cfg.Region == "us-west-2"
		}},
		{"shared cache region wins", map[string]string{KeySharedCache: "http://127.0.0.1:9000/tier", KeyRegion: "eu-west-1", KeySharedCacheRegion: "us-east-2"}, func(s Spec) bool {
			cfg, _, _ := s.SharedCacheConfig()
			return cfg.Region == "us-east-2" && cfg.PathStyle
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s, other, err := ParseAttributes(c.attrs)
			if err != nil || len(other) > 0 {
				t.Fatalf("ParseAttributes(%v): %v, other keys %q", c.attrs, err, other)
			}
			if !c.check(s) {
				t.Errorf("ParseAttributes(%v) = %+v", c.attrs, s)
			}
		})
	}
}

func TestParseAttributesErrors(t *testing.T) {
	cases := []struct {
		name  string
		attrs map[string]string
		// mention lists words the error must contain so the user can act.
		mention []string
	}{
		{"bad backend", map[string]string{KeyBackend: "ftp"}, []string{KeyBackend, "ftp", "s3"}},
		{"bad quantity", map[string]string{KeyCacheSize: "10GB"}, []string{KeyCacheSize, "10Gi"}},
		{"negative quantity", map[string]string{KeyCacheSize: "-1Gi"}, []string{KeyCacheSize}},
		{"huge quantity", map[string]string{KeyCacheSize: "100Ei"}, []string{KeyCacheSize}},
		{"block not 4Ki multiple", map[string]string{KeyCacheBlockSize: "5000"}, []string{KeyCacheBlockSize, "4Ki", "1Gi"}},
		{"block too big", map[string]string{KeyCacheBlockSize: "2Gi"}, []string{KeyCacheBlockSize, "1Gi"}},
		{"bad ttl", map[string]string{KeyMetadataTTL: "90"}, []string{KeyMetadataTTL, "90s"}},
		{"negative ttl", map[string]string{KeyMetadataTTL: "-5s"}, []string{KeyMetadataTTL, "-1"}},
		{"fetches zero", map[string]string{KeyMaxParallelFetches: "0"}, []string{KeyMaxParallelFetches, "1024"}},
		{"fetches not a number", map[string]string{KeyMaxParallelFetches: "many"}, []string{KeyMaxParallelFetches, "1024"}},
		{"uid negative", map[string]string{KeyUID: "-1"}, []string{KeyUID, "4294967294"}},
		{"gid too big", map[string]string{KeyGID: "4294967295"}, []string{KeyGID, "4294967294"}},
		{"mode not octal", map[string]string{KeyFileMode: "0988"}, []string{KeyFileMode, "0777"}},
		{"mode too big", map[string]string{KeyDirMode: "01777"}, []string{KeyDirMode, "0777"}},
		{"bad bool", map[string]string{KeyReadOnly: "yes"}, []string{KeyReadOnly, "true or false"}},
		{"bad open mode", map[string]string{KeyOpenMode: "Kernel"}, []string{KeyOpenMode, `"server"`, `"kernel"`}},
		{"bad upload mode", map[string]string{KeyUploadMode: "writeback"}, []string{KeyUploadMode, `"sync"`, `"async"`}},
		{"bad prefetch", map[string]string{KeyPrefetch: "sometimes"}, []string{KeyPrefetch}},
		{"prefetch budget zero", map[string]string{KeyPrefetchBudget: "0"}, []string{KeyPrefetchBudget}},
		{"buffer size zero", map[string]string{KeyBufferSize: "0"}, []string{KeyBufferSize, "from 16Mi to 64Gi"}},
		{"buffer size too small", map[string]string{KeyBufferSize: "8Mi"}, []string{KeyBufferSize, "from 16Mi to 64Gi"}},
		{"buffer size too large", map[string]string{KeyBufferSize: "65Gi"}, []string{KeyBufferSize, "from 16Mi to 64Gi"}},
		{"bad endpoint", map[string]string{KeyEndpoint: "minio:9000"}, []string{KeyEndpoint, "http(s)://"}},
		{"endpoint with user", map[string]string{KeyEndpoint: "http://u:p@minio:9000"}, []string{KeyEndpoint}},
		{"bad region", map[string]string{KeyRegion: "US East"}, []string{KeyRegion}},
		{"dotdot prefix", map[string]string{KeyBucket: "b12", KeyPrefix: "a/../b"}, []string{KeyPrefix}},
		{"double slash prefix", map[string]string{KeyBucket: "b12", KeyPrefix: "a//b"}, []string{KeyPrefix}},
		{"bad mount option", map[string]string{KeyMountOptions: "a b"}, []string{KeyMountOptions}},
		{"unknown mount option", map[string]string{KeyMountOptions: "noexec,max_read=4096"}, []string{KeyMountOptions, `"max_read=4096"`, "noatime", "ro"}},
		{"contradicting mount options", map[string]string{KeyMountOptions: "ro,rw"}, []string{KeyMountOptions, "ro", "rw"}},
		{"long mount options", map[string]string{KeyMountOptions: strings.Repeat("ro,", 400)}, []string{KeyMountOptions, "1024"}},
		{"bad bucket", map[string]string{KeyBucket: "my/bucket"}, []string{KeyBucket}},
		{"gcs upper bucket", map[string]string{KeyBackend: "gcs", KeyBucket: "MyBucket"}, []string{KeyBucket}},
		{"relative file dir", map[string]string{KeyBackend: "file", KeyBucket: "data"}, []string{KeyBucket}},
		{"file endpoint", map[string]string{KeyBackend: "file", KeyBucket: "/d", KeyEndpoint: "http://x"}, []string{KeyEndpoint}},
		{"file region", map[string]string{KeyBackend: "file", KeyBucket: "/d", KeyRegion: "x"}, []string{KeyRegion}},
		{"gcs path style", map[string]string{KeyBackend: "gcs", KeyPathStyle: "true"}, []string{KeyPathStyle}},
		{"s3 project", map[string]string{KeyProject: "p"}, []string{KeyProject}},
		{"shared cache not a URL", map[string]string{KeySharedCache: "minio:9000/tier"}, []string{KeySharedCache, "http(s)://host[:port]/bucket[/prefix]"}},
		{"shared cache without bucket", map[string]string{KeySharedCache: "http://minio:9000/"}, []string{KeySharedCache, "bucket"}},
		{"shared cache bad bucket", map[string]string{KeySharedCache: "http://minio:9000/a"}, []string{KeySharedCache, "bucket"}},
		{"shared cache with user", map[string]string{KeySharedCache: "http://k:s@minio:9000/tier"}, []string{KeySharedCache, "secret"}},
		{"shared cache s3 with port", map[string]string{KeySharedCache: "s3://tier:443/x"}, []string{KeySharedCache, "s3://bucket[/prefix]"}},
		{"shared cache other scheme", map[string]string{KeySharedCache: "gs://tier/x"}, []string{KeySharedCache, "s3://bucket[/prefix]"}},
		{"shared cache s3 bad bucket", map[string]string{KeySharedCache: "s3://a"}, []string{KeySharedCache, "bucket"}},
		{"shared cache region without tier", map[string]string{KeySharedCacheRegion: "us-west-2"}, []string{KeySharedCacheRegion, KeySharedCache}},
		{"shared cache region bad", map[string]string{KeySharedCache: "s3://tier", KeySharedCacheRegion: "US_WEST"}, []string{KeySharedCacheRegion, "lower-case"}},
		{"shared cache dotdot", map[string]string{KeySharedCache: "http://minio:9000/tier/../x"}, []string{KeySharedCache, "prefix"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, _, err := ParseAttributes(c.attrs)
			if !errors.Is(err, ErrInvalid) {
				t.Fatalf("ParseAttributes(%v) = %v; want ErrInvalid", c.attrs, err)
			}
			for _, w := range c.mention {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not mention %q", err, w)
				}
			}
		})
	}
}

// A user sees every mistake at once, and the keys that are not mount
// settings come back for the caller.
func TestParseAttributesReportsEveryProblem(t *testing.T) {
	_, other, err := ParseAttributes(map[string]string{
		KeyCacheSize: "lots", KeyMetadataTTL: "soon", KeyUID: "root", KeyCacheBlockSize: "1", "warmup": "/", "colour": "blue",
	})
	if !errors.Is(err, ErrInvalid) {
		t.Fatalf("err = %v", err)
	}
	for _, k := range []string{KeyCacheSize, KeyMetadataTTL, KeyUID, KeyCacheBlockSize} {
		if !strings.Contains(err.Error(), k) {
			t.Errorf("error does not mention %s:\n%v", k, err)
		}
	}
	if !reflect.DeepEqual(other, []string{"colour", "warmup"}) {
		t.Errorf("other keys %q", other)
	}
}

// TestOneSetOfLimits: a value out of a setting's limits is refused with
// the same words whether it comes from an attribute, a flag or a hand-off
// file.
func TestOneSetOfLimits(t *testing.T) {
	for _, c := range []struct {
		key, text string
		edit      func(*Spec)
	}{
		{KeyCacheBlockSize, "6000", func(s *Spec) { s.CacheBlockSize = 6000 }},
		{KeyMaxParallelFetches, "1025", func(s *Spec) { s.MaxParallelFetches = 1025 }},
		{KeyPrefetchBudget, "0", func(s *Spec) { s.PrefetchBudget = 0 }},
		{KeyFileMode, "1777", func(s *Spec) { s.FileMode = 0o1777 }},
		{KeyGID, "4294967295", func(s *Spec) { s.GID = MaxID + 1 }},
	} {
		_, _, aerr := ParseAttributes(map[string]string{c.key: c.text})
		s := testSpec()
		c.edit(&s)
		verr := s.Validate()
		if aerr == nil || verr == nil || aerr.Error() != strings.TrimPrefix(verr.Error(), ErrInvalid.Error()+": ") {
			t.Errorf("%s=%s: attribute error %v, Validate error %v; want the same", c.key, c.text, aerr, verr)
		}
	}
}

func TestStoreConfigAndSource(t *testing.T) {
	cases := []struct {
		attrs  map[string]string
		source string
	}{
		{map[string]string{KeyBucket: "b12", KeyPrefix: "x/y", KeyEndpoint: "http://m:9000", KeyRegion: "us-east-1", KeyPathStyle: "true"}, "s3://b12/x/y/"},
		{map[string]string{KeyBackend: "oss", KeyBucket: "b12"}, "oss://b12/"},
		{map[string]string{KeyBackend: "gcs", KeyBucket: "b12", KeyProject: "p"}, "gs://b12/"},
		{map[string]string{KeyBackend: "file", KeyBucket: "/srv/d", KeyPrefix: "v1"}, "file:///srv/d/v1"},
	}
	for _, c := range cases {
		s, _, err := ParseAttributes(c.attrs)
		if err != nil {
			t.Fatal(err)
		}
		if got := s.SourceURL(); got != c.source {
			t.Errorf("SourceURL = %q; want %q", got, c.source)
		}
		cfg := s.StoreConfig()
		if err := cfg.Validate(); err != nil {
			t.Errorf("StoreConfig(%v).Validate: %v", c.attrs, err)
		}
		if cfg.Bucket != s.Bucket || cfg.Endpoint != s.Endpoint || cfg.Region != s.Region ||
			cfg.PathStyle != s.PathStyle || cfg.Project != s.Project || cfg.Backend != s.Backend {
			t.Errorf("StoreConfig = %+v from %+v", cfg, s)
		}
	}
}

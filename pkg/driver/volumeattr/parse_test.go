package volumeattr

import (
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/basin-csi/basin/pkg/mountspec"
	"github.com/basin-csi/basin/pkg/objstore"
)

func TestParseDefaults(t *testing.T) {
	a, err := Parse(map[string]string{KeyBucket: "data"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	want := Defaults()
	want.Bucket = "data"
	want.Provisioning = ProvisionPrefix
	if !reflect.DeepEqual(a, want) {
		t.Errorf("Parse(bucket only) =\n%+v\nwant\n%+v", a, want)
	}
	a, err = Parse(nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if a.Provisioning != ProvisionBucket || a.Backend != objstore.BackendS3 || a.Reclaim != ReclaimDelete {
		t.Errorf("Parse(nil): provisioning %q backend %q reclaim %q; want bucket, s3, delete", a.Provisioning, a.Backend, a.Reclaim)
	}
}

func TestParseValues(t *testing.T) {
	cases := []struct {
		name   string
		params map[string]string
		check  func(Attributes) bool
	}{
		{"quantity Gi", map[string]string{KeyCacheSize: "20Gi"}, func(a Attributes) bool { return a.CacheSize == 20<<30 }},
		{"quantity decimal", map[string]string{KeyCacheSize: "1.5G"}, func(a Attributes) bool { return a.CacheSize == 1_500_000_000 }},
		{"quantity exponent", map[string]string{KeyReadAhead: "1e6"}, func(a Attributes) bool { return a.ReadAhead == 1_000_000 }},
		{"quantity zero", map[string]string{KeyReadAhead: "0"}, func(a Attributes) bool { return a.ReadAhead == 0 }},
		{"block size", map[string]string{KeyCacheBlockSize: "8Mi"}, func(a Attributes) bool { return a.CacheBlockSize == 8<<20 }},
		{"ttl duration", map[string]string{KeyMetadataTTL: "90s"}, func(a Attributes) bool { return a.MetadataTTL == 90*time.Second }},
		{"ttl zero", map[string]string{KeyMetadataTTL: "0"}, func(a Attributes) bool { return a.MetadataTTL == 0 }},
		{"ttl forever", map[string]string{KeyNegativeMetadataTTL: "-1"}, func(a Attributes) bool { return a.NegativeMetadataTTL == Forever }},
		{"uid gid", map[string]string{KeyUID: "1000", KeyGID: "0"}, func(a Attributes) bool { return a.UID == 1000 && a.GID == 0 }},
		{"modes", map[string]string{KeyFileMode: "0600", KeyDirMode: "750"}, func(a Attributes) bool { return a.FileMode == 0o600 && a.DirMode == 0o750 }},
		{"bools", map[string]string{KeyReadOnly: "True", KeyPathStyle: "1"}, func(a Attributes) bool { return a.ReadOnly && a.PathStyle }},
		{"open mode", map[string]string{KeyOpenMode: "kernel", KeyReadOnly: "true"}, func(a Attributes) bool { return a.OpenMode == mountspec.OpenKernel }},
		{"open mode default", map[string]string{}, func(a Attributes) bool { return a.OpenMode == mountspec.OpenServer }},
		{"prefix normalised", map[string]string{KeyBucket: "b12", KeyPrefix: "/a/b"}, func(a Attributes) bool { return a.Prefix == "a/b/" }},
		{"mount options", map[string]string{KeyMountOptions: " noexec, noatime,,noexec"}, func(a Attributes) bool {
			return reflect.DeepEqual(a.MountOptions, []string{"noexec", "noatime"})
		}},
		{"empty mount options", map[string]string{KeyMountOptions: ""}, func(a Attributes) bool { return a.MountOptions == nil }},
		{"explicit provisioning", map[string]string{KeyBucket: "b12", KeyProvisioning: "bucket"}, func(a Attributes) bool { return a.Provisioning == ProvisionBucket }},
		{"retain", map[string]string{KeyReclaim: "retain"}, func(a Attributes) bool { return a.Reclaim == ReclaimRetain }},
		{"cache affinity default", map[string]string{}, func(a Attributes) bool { return a.CacheAffinity }},
		{"cache affinity off", map[string]string{KeyCacheAffinity: "false"}, func(a Attributes) bool { return !a.CacheAffinity }},
		{"prefetch default", map[string]string{}, func(a Attributes) bool { return a.Prefetch && a.PrefetchBudget == 4<<30 }},
		{"prefetch off", map[string]string{KeyPrefetch: "false"}, func(a Attributes) bool { return !a.Prefetch && a.MountSpec().Prefetch == false }},
		{"prefetch budget", map[string]string{KeyPrefetchBudget: "512Mi"}, func(a Attributes) bool { return a.PrefetchBudget == 512<<20 && a.MountSpec().PrefetchBudget == 512<<20 }},
		{"gcs project", map[string]string{KeyBackend: "gcs", KeyProject: "p-1"}, func(a Attributes) bool { return a.Backend == objstore.BackendGCS && a.Project == "p-1" }},
		{"file dir", map[string]string{KeyBackend: "file", KeyBucket: "/srv/data"}, func(a Attributes) bool { return a.Bucket == "/srv/data" && a.Provisioning == ProvisionPrefix }},
		{"kubernetes keys ignored", map[string]string{
			"csi.storage.k8s.io/pvc/name": "x", "csi.storage.k8s.io/pod.name": "p",
			"storage.kubernetes.io/csiProvisionerIdentity": "123-basin.csi.dev",
		}, func(a Attributes) bool { return a.Backend == objstore.BackendS3 }},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			a, err := Parse(c.params, nil)
			if err != nil {
				t.Fatalf("Parse(%v): %v", c.params, err)
			}
			if !c.check(a) {
				t.Errorf("Parse(%v) = %+v", c.params, a)
			}
		})
	}
}

func TestParseErrors(t *testing.T) {
	cases := []struct {
		name    string
		params  map[string]string
		secrets map[string]string
		// mention lists words the error must contain so the user can act.
		mention []string
	}{
		{"unknown key", map[string]string{"cachesize": "1Gi"}, nil, []string{`"cachesize"`, KeyCacheSize, KeyMountOptions}},
		{"bad backend", map[string]string{KeyBackend: "ftp"}, nil, []string{KeyBackend, "ftp"}},
		{"bad quantity", map[string]string{KeyCacheSize: "10GB"}, nil, []string{KeyCacheSize}},
		{"negative quantity", map[string]string{KeyCacheSize: "-1Gi"}, nil, []string{KeyCacheSize}},
		{"huge quantity", map[string]string{KeyCacheSize: "100Ei"}, nil, []string{KeyCacheSize}},
		{"block not 4Ki multiple", map[string]string{KeyCacheBlockSize: "5000"}, nil, []string{KeyCacheBlockSize}},
		{"bad ttl", map[string]string{KeyMetadataTTL: "90"}, nil, []string{KeyMetadataTTL}},
		{"negative ttl", map[string]string{KeyMetadataTTL: "-5s"}, nil, []string{KeyMetadataTTL}},
		{"fetches zero", map[string]string{KeyMaxParallelFetches: "0"}, nil, []string{KeyMaxParallelFetches}},
		{"uid negative", map[string]string{KeyUID: "-1"}, nil, []string{KeyUID}},
		{"mode not octal", map[string]string{KeyFileMode: "0988"}, nil, []string{KeyFileMode}},
		{"mode too big", map[string]string{KeyDirMode: "01777"}, nil, []string{KeyDirMode}},
		{"bad bool", map[string]string{KeyReadOnly: "yes"}, nil, []string{KeyReadOnly}},
		{"bad open mode", map[string]string{KeyOpenMode: "Kernel"}, nil, []string{KeyOpenMode, `"server"`, `"kernel"`}},
		{"bad cache affinity", map[string]string{KeyCacheAffinity: "off"}, nil, []string{KeyCacheAffinity}},
		{"bad prefetch", map[string]string{KeyPrefetch: "sometimes"}, nil, []string{KeyPrefetch}},
		{"prefetch budget zero", map[string]string{KeyPrefetchBudget: "0"}, nil, []string{KeyPrefetchBudget}},
		{"bad provisioning", map[string]string{KeyProvisioning: "volume"}, nil, []string{KeyProvisioning}},
		{"bad reclaim", map[string]string{KeyReclaim: "keep"}, nil, []string{KeyReclaim}},
		{"bad endpoint", map[string]string{KeyEndpoint: "minio:9000"}, nil, []string{KeyEndpoint}},
		{"endpoint with user", map[string]string{KeyEndpoint: "http://u:p@minio:9000"}, nil, []string{KeyEndpoint}},
		{"bad region", map[string]string{KeyRegion: "US East"}, nil, []string{KeyRegion}},
		{"dotdot prefix", map[string]string{KeyBucket: "b12", KeyPrefix: "a/../b"}, nil, []string{KeyPrefix}},
		{"double slash prefix", map[string]string{KeyBucket: "b12", KeyPrefix: "a//b"}, nil, []string{KeyPrefix}},
		{"bad mount option", map[string]string{KeyMountOptions: "a b"}, nil, []string{KeyMountOptions}},
		{"unknown mount option", map[string]string{KeyMountOptions: "noexec,max_read=4096"}, nil, []string{KeyMountOptions, `"max_read=4096"`, "noatime", "ro"}},
		{"contradicting mount options", map[string]string{KeyMountOptions: "ro,rw"}, nil, []string{KeyMountOptions, "ro", "rw"}},
		{"bad bucket", map[string]string{KeyBucket: "my/bucket"}, nil, []string{KeyBucket}},
		{"gcs upper bucket", map[string]string{KeyBackend: "gcs", KeyBucket: "MyBucket"}, nil, []string{KeyBucket}},
		{"relative file dir", map[string]string{KeyBackend: "file", KeyBucket: "data"}, nil, []string{KeyBucket}},
		{"prefix mode without bucket", map[string]string{KeyProvisioning: "prefix"}, nil, []string{KeyProvisioning, KeyBucket}},
		{"file bucket mode", map[string]string{KeyBackend: "file", KeyBucket: "/d", KeyProvisioning: "bucket"}, nil, []string{KeyProvisioning}},
		{"file endpoint", map[string]string{KeyBackend: "file", KeyBucket: "/d", KeyEndpoint: "http://x"}, nil, []string{KeyEndpoint}},
		{"gcs path style", map[string]string{KeyBackend: "gcs", KeyPathStyle: "true"}, nil, []string{KeyPathStyle}},
		{"s3 project", map[string]string{KeyProject: "p"}, nil, []string{KeyProject}},
		{"secret endpoint disagrees", map[string]string{KeyEndpoint: "http://a:1"}, map[string]string{SecretEndpoint: "http://b:1"}, []string{KeyEndpoint}},
		{"unknown secret key", nil, map[string]string{"AWS_ACCESS_KEY_ID": "x"}, []string{"AWS_ACCESS_KEY_ID", SecretAccessKeyID}},
		{"half key pair", nil, map[string]string{SecretAccessKeyID: "x"}, []string{SecretSecretAccessKey}},
		{"gcs json for s3", nil, map[string]string{SecretGCSCredentialsJSON: "{}"}, []string{SecretGCSCredentialsJSON}},
		{"keys for gcs", map[string]string{KeyBackend: "gcs"}, map[string]string{SecretAccessKeyID: "a", SecretSecretAccessKey: "b"}, []string{SecretGCSCredentialsJSON}},
		{"keys for file", map[string]string{KeyBackend: "file", KeyBucket: "/d"}, map[string]string{SecretAccessKeyID: "a", SecretSecretAccessKey: "b"}, []string{"file"}},
		{"gcs json invalid", map[string]string{KeyBackend: "gcs"}, map[string]string{SecretGCSCredentialsJSON: "{"}, []string{SecretGCSCredentialsJSON}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := Parse(c.params, c.secrets)
			if !errors.Is(err, ErrInvalid) {
				t.Fatalf("Parse(%v) = %v; want ErrInvalid", c.params, err)
			}
			for _, w := range c.mention {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not mention %q", err, w)
				}
			}
		})
	}
}

// A user sees every mistake at once.
func TestParseReportsEveryProblem(t *testing.T) {
	params := map[string]string{
		KeyCacheSize: "lots", KeyMetadataTTL: "soon", KeyUID: "root", "colour": "blue", "size": "1",
	}
	_, err := Parse(params, map[string]string{SecretAccessKeyID: "only-half"})
	if !errors.Is(err, ErrInvalid) {
		t.Fatalf("err = %v", err)
	}
	for _, k := range []string{KeyCacheSize, KeyMetadataTTL, KeyUID, `"colour"`, `"size"`, SecretSecretAccessKey} {
		if !strings.Contains(err.Error(), k) {
			t.Errorf("error does not mention %s:\n%v", k, err)
		}
	}
}

func TestParseMergesSecretConnection(t *testing.T) {
	a, err := Parse(map[string]string{KeyPathStyle: "true"},
		map[string]string{SecretEndpoint: "http://minio:9000\n", SecretRegion: "eu-west-1", SecretAccessKeyID: "AK", SecretSecretAccessKey: "SK"})
	if err != nil {
		t.Fatal(err)
	}
	if a.Endpoint != "http://minio:9000" || a.Region != "eu-west-1" {
		t.Errorf("endpoint %q region %q; want the secret's", a.Endpoint, a.Region)
	}
	// The same value in both places is fine.
	if _, err := Parse(map[string]string{KeyRegion: "eu-west-1"}, map[string]string{SecretRegion: "eu-west-1"}); err != nil {
		t.Error(err)
	}
	// A file backend refuses an endpoint from the secret too.
	_, err = Parse(map[string]string{KeyBackend: "file", KeyBucket: "/d"}, map[string]string{SecretEndpoint: "http://x:1"})
	if !errors.Is(err, ErrInvalid) {
		t.Errorf("file backend with a secret endpoint: %v", err)
	}
}

func TestCheckMountable(t *testing.T) {
	a, err := Parse(nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := a.CheckMountable(); !errors.Is(err, ErrInvalid) {
		t.Errorf("no bucket: %v", err)
	}
	a.Bucket = "b12"
	if err := a.CheckMountable(); err != nil {
		t.Error(err)
	}
}

func TestStoreConfigAndSource(t *testing.T) {
	cases := []struct {
		params map[string]string
		source string
	}{
		{map[string]string{KeyBucket: "b12", KeyPrefix: "x/y", KeyEndpoint: "http://m:9000", KeyRegion: "us-east-1", KeyPathStyle: "true"}, "s3://b12/x/y/"},
		{map[string]string{KeyBackend: "oss", KeyBucket: "b12"}, "oss://b12/"},
		{map[string]string{KeyBackend: "gcs", KeyBucket: "b12", KeyProject: "p"}, "gs://b12/"},
		{map[string]string{KeyBackend: "file", KeyBucket: "/srv/d", KeyPrefix: "v1"}, "file:///srv/d/v1"},
	}
	for _, c := range cases {
		a, err := Parse(c.params, nil)
		if err != nil {
			t.Fatal(err)
		}
		if got := a.SourceURL(); got != c.source {
			t.Errorf("SourceURL = %q; want %q", got, c.source)
		}
		cfg := a.StoreConfig()
		if err := cfg.Validate(); err != nil {
			t.Errorf("StoreConfig(%v).Validate: %v", c.params, err)
		}
		if cfg.Bucket != a.Bucket || cfg.Endpoint != a.Endpoint || cfg.Region != a.Region ||
			cfg.PathStyle != a.PathStyle || cfg.Project != a.Project || cfg.Backend != a.Backend {
			t.Errorf("StoreConfig = %+v from %+v", cfg, a)
		}
	}
}

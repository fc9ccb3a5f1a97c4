package volumeattr

import (
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/basin-csi/basin/internal/mountdefaults"
	"github.com/basin-csi/basin/pkg/mountspec"
	"github.com/basin-csi/basin/pkg/objstore"
)

func TestParseDefaults(t *testing.T) {
	a, err := Parse(map[string]string{mountspec.KeyBucket: "data"}, nil)
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
		{"open mode", map[string]string{mountspec.KeyOpenMode: "kernel", mountspec.KeyReadOnly: "true"}, func(a Attributes) bool { return a.OpenMode == mountdefaults.OpenKernel }},
		{"explicit provisioning", map[string]string{mountspec.KeyBucket: "b12", KeyProvisioning: "bucket"}, func(a Attributes) bool { return a.Provisioning == ProvisionBucket }},
		{"retain", map[string]string{KeyReclaim: "retain"}, func(a Attributes) bool { return a.Reclaim == ReclaimRetain }},
		{"cache affinity default", map[string]string{}, func(a Attributes) bool { return a.CacheAffinity }},
		{"cache affinity off", map[string]string{KeyCacheAffinity: "false"}, func(a Attributes) bool { return !a.CacheAffinity }},
		{"shared cache bounds", map[string]string{mountspec.KeySharedCache: "http://tier:9000/tier", KeySharedCacheSize: "2Ti", KeySharedCacheMaxAge: "168h"},
			func(a Attributes) bool { return a.SharedCacheSize == 2<<40 && a.SharedCacheMaxAge == 168*time.Hour }},
		{"shared cache unbounded", map[string]string{mountspec.KeySharedCache: "http://tier:9000/tier"},
			func(a Attributes) bool { return a.SharedCacheSize == 0 && a.SharedCacheMaxAge == 0 }},
		{"prefetch default", map[string]string{}, func(a Attributes) bool { return a.Prefetch && a.PrefetchBudget == 4<<30 }},
		{"prefetch off", map[string]string{mountspec.KeyPrefetch: "false"}, func(a Attributes) bool { return !a.Prefetch }},
		{"prefetch budget", map[string]string{mountspec.KeyPrefetchBudget: "512Mi"}, func(a Attributes) bool { return a.PrefetchBudget == 512<<20 }},
		{"file dir", map[string]string{mountspec.KeyBackend: "file", mountspec.KeyBucket: "/srv/data"}, func(a Attributes) bool { return a.Bucket == "/srv/data" && a.Provisioning == ProvisionPrefix }},
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
		{"unknown key", map[string]string{"cachesize": "1Gi"}, nil, []string{`"cachesize"`, mountspec.KeyCacheSize, mountspec.KeyMountOptions}},
		{"bad open mode", map[string]string{mountspec.KeyOpenMode: "Kernel"}, nil, []string{mountspec.KeyOpenMode, `"server"`, `"kernel"`}},
		{"bad cache affinity", map[string]string{KeyCacheAffinity: "off"}, nil, []string{KeyCacheAffinity}},
		{"bad shared cache size", map[string]string{mountspec.KeySharedCache: "http://t:1/tier", KeySharedCacheSize: "lots"}, nil, []string{KeySharedCacheSize}},
		{"shared cache age below two days", map[string]string{mountspec.KeySharedCache: "http://t:1/tier", KeySharedCacheMaxAge: "12h"}, nil, []string{KeySharedCacheMaxAge, "48h"}},
		{"shared cache size without tier", map[string]string{KeySharedCacheSize: "1Ti"}, nil, []string{KeySharedCacheSize, mountspec.KeySharedCache}},
		{"bad provisioning", map[string]string{KeyProvisioning: "volume"}, nil, []string{KeyProvisioning}},
		{"bad reclaim", map[string]string{KeyReclaim: "keep"}, nil, []string{KeyReclaim}},
		{"bad endpoint", map[string]string{mountspec.KeyEndpoint: "minio:9000"}, nil, []string{mountspec.KeyEndpoint}},
		{"unknown mount option", map[string]string{mountspec.KeyMountOptions: "noexec,max_read=4096"}, nil, []string{mountspec.KeyMountOptions, `"max_read=4096"`, "noatime", "ro"}},
		{"bad bucket", map[string]string{mountspec.KeyBucket: "my/bucket"}, nil, []string{mountspec.KeyBucket}},
		{"prefix mode without bucket", map[string]string{KeyProvisioning: "prefix"}, nil, []string{KeyProvisioning, mountspec.KeyBucket}},
		{"file bucket mode", map[string]string{mountspec.KeyBackend: "file", mountspec.KeyBucket: "/d", KeyProvisioning: "bucket"}, nil, []string{KeyProvisioning}},
		{"file endpoint", map[string]string{mountspec.KeyBackend: "file", mountspec.KeyBucket: "/d", mountspec.KeyEndpoint: "http://x"}, nil, []string{mountspec.KeyEndpoint}},
		{"secret endpoint disagrees", map[string]string{mountspec.KeyEndpoint: "http://a:1"}, map[string]string{SecretEndpoint: "http://b:1"}, []string{mountspec.KeyEndpoint}},
		{"unknown secret key", nil, map[string]string{"AWS_ACCESS_KEY_ID": "x"}, []string{"AWS_ACCESS_KEY_ID", SecretAccessKeyID}},
		{"half key pair", nil, map[string]string{SecretAccessKeyID: "x"}, []string{SecretSecretAccessKey}},
		{"gcs json for s3", nil, map[string]string{SecretGCSCredentialsJSON: "{}"}, []string{SecretGCSCredentialsJSON}},
		{"keys for gcs", map[string]string{mountspec.KeyBackend: "gcs"}, map[string]string{SecretAccessKeyID: "a", SecretSecretAccessKey: "b"}, []string{SecretGCSCredentialsJSON}},
		{"keys for file", map[string]string{mountspec.KeyBackend: "file", mountspec.KeyBucket: "/d"}, map[string]string{SecretAccessKeyID: "a", SecretSecretAccessKey: "b"}, []string{"file"}},
		{"gcs json invalid", map[string]string{mountspec.KeyBackend: "gcs"}, map[string]string{SecretGCSCredentialsJSON: "{"}, []string{SecretGCSCredentialsJSON}},
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
		mountspec.KeyCacheSize: "lots", mountspec.KeyMetadataTTL: "soon", mountspec.KeyUID: "root", "colour": "blue", "size": "1",
	}
	_, err := Parse(params, map[string]string{SecretAccessKeyID: "only-half"})
	if !errors.Is(err, ErrInvalid) {
		t.Fatalf("err = %v", err)
	}
	for _, k := range []string{mountspec.KeyCacheSize, mountspec.KeyMetadataTTL, mountspec.KeyUID, `"colour"`, `"size"`, SecretSecretAccessKey} {
		if !strings.Contains(err.Error(), k) {
			t.Errorf("error does not mention %s:\n%v", k, err)
		}
	}
}

func TestParseMergesSecretConnection(t *testing.T) {
	a, err := Parse(map[string]string{mountspec.KeyPathStyle: "true"},
		map[string]string{SecretEndpoint: "http://minio:9000\n", SecretRegion: "eu-west-1", SecretAccessKeyID: "AK", SecretSecretAccessKey: "SK"})
	if err != nil {
		t.Fatal(err)
	}
	if a.Endpoint != "http://minio:9000" || a.Region != "eu-west-1" {
		t.Errorf("endpoint %q region %q; want the secret's", a.Endpoint, a.Region)
	}
	// The same value in both places is fine.
	if _, err := Parse(map[string]string{mountspec.KeyRegion: "eu-west-1"}, map[string]string{SecretRegion: "eu-west-1"}); err != nil {
		t.Error(err)
	}
	// A file backend refuses an endpoint from the secret too.
	_, err = Parse(map[string]string{mountspec.KeyBackend: "file", mountspec.KeyBucket: "/d"}, map[string]string{SecretEndpoint: "http://x:1"})
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

package volumeattr

import (
	"math/rand"
	"reflect"
	"strings"
	"testing"
	"testing/quick"
	"time"

	"github.com/basin-csi/basin/pkg/mountspec"
	"github.com/basin-csi/basin/pkg/objstore"
)

// genAttrs generates valid Attributes for testing/quick: the settings
// that are not the mount's, the secret, and the mount settings they depend
// on (mountspec's own round-trip test covers the rest).
type genAttrs struct{ A Attributes }

func (genAttrs) Generate(r *rand.Rand, _ int) reflect.Value {
	pick := func(options ...string) string { return options[r.Intn(len(options))] }
	a := Defaults()
	a.Backend = objstore.Backends[r.Intn(len(objstore.Backends))]
	switch a.Backend {
	case objstore.BackendFile:
		a.Bucket = pick("/srv/data", "/var/lib/basin/buckets/x", "/d")
		a.Provisioning = ProvisionPrefix
	default:
		a.Bucket = pick("", "b12", "my-bucket.example", "data-2024")
		a.Endpoint = pick("", "http://127.0.0.1:9000", "https://s3.example.com/base")
		a.Region = pick("", "us-east-1", "oss-cn-hangzhou", "europe-west4")
		a.Provisioning = Provisioning(pick(string(ProvisionBucket), string(ProvisionPrefix)))
		if a.Bucket == "" {
			a.Provisioning = ProvisionBucket
		}
	}
	a.Prefix = pick("", "a/", "datasets/imagenet/train/")
	a.MetadataTTL = []time.Duration{0, mountspec.Forever, 90 * time.Second}[r.Intn(3)]
	a.Reclaim = Reclaim(pick(string(ReclaimDelete), string(ReclaimRetain)))
	a.CacheAffinity = r.Intn(2) == 0
	if a.Backend != objstore.BackendFile && r.Intn(2) == 0 {
		a.SharedCache = "http://127.0.0.1:9100/tier"
		a.SharedCacheSize = []int64{0, 1 << 40, 1500}[r.Intn(3)]
		a.SharedCacheMaxAge = []time.Duration{0, MinSharedCacheMaxAge, 7 * 24 * time.Hour}[r.Intn(3)]
	}
	if n := r.Intn(3); n > 0 {
		a.Warmup = []string{"train", WarmupAll, "val/labels.csv"}[:n]
	}
	switch a.Backend {
	case objstore.BackendS3, objstore.BackendOSS:
		if r.Intn(2) == 0 {
			a.Secrets = Secrets{AccessKeyID: "AK" + pick("1", "2"), SecretAccessKey: "sk", SessionToken: pick("", "tok")}
		}
	case objstore.BackendGCS:
		a.Secrets.GCSCredentialsJSON = pick("", `{"type":"service_account"}`)
	}
	if a.Backend != objstore.BackendFile && r.Intn(2) == 0 {
		a.Secrets.Endpoint, a.Secrets.Region = a.Endpoint, a.Region
	}
	return reflect.ValueOf(genAttrs{a})
}

func TestEncodeParseRoundTrip(t *testing.T) {
	f := func(g genAttrs) bool {
		got, err := Parse(Encode(g.A), g.A.Secrets.Map())
		if err != nil {
			t.Logf("Parse(Encode(%+v)): %v", g.A, err)
			return false
		}
		if !reflect.DeepEqual(got, g.A) {
			t.Logf("round trip changed\n%#v\ninto\n%#v\nvia %v", g.A, got, Encode(g.A))
			return false
		}
		return true
	}
	if err := quick.Check(f, &quick.Config{MaxCount: 2000}); err != nil {
		t.Error(err)
	}
}

func TestEncodeIsCanonical(t *testing.T) {
	a, err := Parse(map[string]string{mountspec.KeyBucket: "b12", mountspec.KeyCacheSize: "1073741824", mountspec.KeyMetadataTTL: "1m30s", mountspec.KeyFileMode: "600"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	m := Encode(a)
	want := map[string]string{mountspec.KeyCacheSize: "1Gi", mountspec.KeyMetadataTTL: "1m30s", mountspec.KeyFileMode: "0600", KeyProvisioning: "prefix", KeyReclaim: "delete", mountspec.KeyReadOnly: "false", KeyCacheAffinity: "true", mountspec.KeyPrefetch: "true", mountspec.KeyPrefetchBudget: "4Gi"}
	for k, v := range want {
		if m[k] != v {
			t.Errorf("Encode[%s] = %q; want %q", k, m[k], v)
		}
	}
	for _, k := range []string{mountspec.KeyEndpoint, mountspec.KeyRegion, mountspec.KeyUID, mountspec.KeyGID, mountspec.KeyMountOptions, mountspec.KeyProject, mountspec.KeyPrefix, KeyWarmup} {
		if _, ok := m[k]; ok {
			t.Errorf("Encode wrote unset key %s", k)
		}
	}
	for k := range m {
		if strings.Contains(k, "ecret") {
			t.Errorf("Encode wrote %s", k)
		}
	}
}

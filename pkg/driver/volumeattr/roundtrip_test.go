package volumeattr

import (
	"math/rand"
	"os"
	"reflect"
	"strings"
	"testing"
	"testing/quick"
	"time"

	"github.com/basin-csi/basin/pkg/mountspec"
	"github.com/basin-csi/basin/pkg/objstore"
)

// genAttrs generates valid Attributes for testing/quick.
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
	if a.Backend == objstore.BackendS3 || a.Backend == objstore.BackendOSS {
		a.PathStyle = r.Intn(2) == 0
	}
	if a.Backend == objstore.BackendGCS {
		a.Project = pick("", "proj-1")
	}
	a.Prefix = pick("", "a/", "datasets/imagenet/train/", "x y/é/")
	size := func(unit int64) int64 { return unit * r.Int63n(1<<20) }
	a.CacheSize = pick64(r, 0, size(1), size(1<<30), 1<<62)
	a.CacheBlockSize = minBlockSize * (1 + r.Int63n(maxBlockSize/minBlockSize))
	a.ReadAhead = pick64(r, 0, size(1), size(1000), size(1<<20))
	ttl := func() time.Duration {
		return []time.Duration{0, Forever, time.Duration(r.Int63n(int64(24 * time.Hour))), 90 * time.Second}[r.Intn(4)]
	}
	a.MetadataTTL, a.NegativeMetadataTTL = ttl(), ttl()
	a.MaxParallelFetches = 1 + r.Intn(maxParallelFetches)
	a.Prefetch = r.Intn(2) == 0
	a.PrefetchBudget = pick64(r, 1, size(1), size(1<<30))
	a.UID, a.GID = pick64(r, -1, 0, r.Int63n(maxID+1)), pick64(r, -1, 0, 65534)
	a.FileMode, a.DirMode = os.FileMode(r.Intn(int(maxModeBits)+1)), os.FileMode(r.Intn(int(maxModeBits)+1))
	a.ReadOnly = r.Intn(2) == 0
	a.OpenMode = mountspec.OpenModes()[r.Intn(2)]
	a.Reclaim = Reclaim(pick(string(ReclaimDelete), string(ReclaimRetain)))
	a.CacheAffinity = r.Intn(2) == 0
	if n := r.Intn(3); n > 0 {
		a.MountOptions = []string{"noexec", "noatime", "allow_other"}[:n]
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

func pick64(r *rand.Rand, options ...int64) int64 { return options[r.Intn(len(options))] }

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
	a, err := Parse(map[string]string{KeyBucket: "b12", KeyCacheSize: "1073741824", KeyMetadataTTL: "1m30s", KeyFileMode: "600"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	m := Encode(a)
	want := map[string]string{KeyCacheSize: "1Gi", KeyMetadataTTL: "1m30s", KeyFileMode: "0600", KeyProvisioning: "prefix", KeyReclaim: "delete", KeyReadOnly: "false", KeyCacheAffinity: "true", KeyPrefetch: "true", KeyPrefetchBudget: "4Gi"}
	for k, v := range want {
		if m[k] != v {
			t.Errorf("Encode[%s] = %q; want %q", k, m[k], v)
		}
	}
	for _, k := range []string{KeyEndpoint, KeyRegion, KeyUID, KeyGID, KeyMountOptions, KeyProject, KeyPrefix, KeyWarmup} {
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

package mountspec

import (
	"errors"
	"math/rand"
	"os"
	"reflect"
	"strings"
	"testing"
	"testing/quick"
	"time"

	"github.com/basin-csi/basin/internal/mountdefaults"
	"github.com/basin-csi/basin/pkg/objstore"
)

// genSpec generates the Specs ParseAttributes can return, for
// testing/quick.
type genSpec struct{ S Spec }

func (genSpec) Generate(r *rand.Rand, _ int) reflect.Value {
	pick := func(options ...string) string { return options[r.Intn(len(options))] }
	pick64 := func(options ...int64) int64 { return options[r.Intn(len(options))] }
	s := Default()
	s.Backend = objstore.Backends[r.Intn(len(objstore.Backends))]
	switch s.Backend {
	case objstore.BackendFile:
		s.Bucket = pick("/srv/data", "/var/lib/basin/buckets/x", "/d")
	default:
		s.Bucket = pick("", "b12", "my-bucket.example", "data-2024")
		s.Endpoint = pick("", "http://127.0.0.1:9000", "https://s3.example.com/base")
		s.Region = pick("", "us-east-1", "oss-cn-hangzhou", "europe-west4")
	}
	if s.Backend == objstore.BackendS3 || s.Backend == objstore.BackendOSS {
		s.PathStyle = r.Intn(2) == 0
	}
	if s.Backend == objstore.BackendGCS {
		s.Project = pick("", "proj-1")
	}
	s.Prefix = pick("", "a/", "datasets/imagenet/train/", "x y/é/")
	size := func(unit int64) int64 { return unit * r.Int63n(1<<20) }
	s.CacheSize = pick64(0, size(1), size(1<<30), 1<<62)
	s.CacheBlockSize = MinCacheBlockSize * (1 + r.Int63n(MaxCacheBlockSize/MinCacheBlockSize))
	s.ReadAhead = pick64(0, size(1), size(1000), size(1<<20))
	ttl := func() time.Duration {
		return []time.Duration{0, Forever, time.Duration(r.Int63n(int64(24 * time.Hour))), 90 * time.Second}[r.Intn(4)]
	}
	s.MetadataTTL, s.NegativeMetadataTTL = ttl(), ttl()
	s.MaxParallelFetches = 1 + r.Intn(MaxParallelFetches)
	s.Prefetch = r.Intn(2) == 0
	s.PrefetchBudget = pick64(1, size(1), size(1<<30))
	s.BufferSize = pick64(MinBufferSize, DefaultBufferSize, MaxBufferSize, MinBufferSize+r.Int63n(MaxBufferSize-MinBufferSize))
	s.UID, s.GID = pick64(-1, 0, r.Int63n(MaxID+1)), pick64(-1, 0, 65534)
	s.FileMode, s.DirMode = os.FileMode(r.Intn(int(ModeBits)+1)), os.FileMode(r.Intn(int(ModeBits)+1))
	s.ReadOnly = r.Intn(2) == 0
	s.RcloneLinks = r.Intn(2) == 0
	s.SharedCache = pick("", "http://127.0.0.1:9000/tier", "https://tier.example:443/b12/team-a/")
	s.OpenMode = mountdefaults.OpenModes()[r.Intn(2)]
	s.UploadMode = mountdefaults.UploadModes()[r.Intn(2)]
	if n := r.Intn(3); n > 0 {
		s.MountOptions = []string{"noexec", "noatime", "ro"}[:n]
	}
	return reflect.ValueOf(genSpec{s})
}

func TestAttributesRoundTrip(t *testing.T) {
	f := func(g genSpec) bool {
		got, other, err := ParseAttributes(g.S.Attributes())
		if err != nil || len(other) > 0 {
			t.Logf("ParseAttributes(%+v.Attributes()): %v, other keys %q", g.S, err, other)
			return false
		}
		if !reflect.DeepEqual(got, g.S) {
			t.Logf("round trip changed\n%#v\ninto\n%#v\nvia %v", g.S, got, g.S.Attributes())
			return false
		}
		return true
	}
	if err := quick.Check(f, &quick.Config{MaxCount: 2000}); err != nil {
		t.Error(err)
	}
}

func TestAttributesAreCanonical(t *testing.T) {
	s, _, err := ParseAttributes(map[string]string{KeyBucket: "b12", KeyCacheSize: "1073741824", KeyMetadataTTL: "1m30s", KeyFileMode: "600"})
	if err != nil {
		t.Fatal(err)
	}
	m := s.Attributes()
	want := map[string]string{KeyCacheSize: "1Gi", KeyMetadataTTL: "1m30s", KeyFileMode: "0600", KeyReadOnly: "false", KeyPrefetch: "true", KeyPrefetchBudget: "4Gi", KeyOpenMode: "server", KeyUploadMode: "sync"}
	for k, v := range want {
		if m[k] != v {
			t.Errorf("Attributes()[%s] = %q; want %q", k, m[k], v)
		}
	}
	for _, k := range []string{KeyEndpoint, KeyRegion, KeyUID, KeyGID, KeyMountOptions, KeyProject, KeyPrefix, KeyOpTimeout} {
		if _, ok := m[k]; ok {
			t.Errorf("Attributes() wrote %s", k)
		}
	}
}

// FuzzParseAttributes feeds ParseAttributes arbitrary attribute maps,
// written as "key=value" lines. Whatever the input: it does not panic, its
// errors wrap ErrInvalid, what it accepts is valid once it has a bucket,
// and it survives Attributes and ParseAttributes unchanged.
func FuzzParseAttributes(f *testing.F) {
	f.Add("bucket=b12\ncacheSize=10Gi\nmetadataTTL=-1")
	f.Add("backend=gcs\nbucket=b12\nproject=p\nprefix=a/b")
	f.Add("backend=file\nbucket=/srv/d\nmountOptions=noexec,ro")
	f.Add("backend=oss\nregion=oss-cn-hangzhou\nreadAhead=1.5Mi\nuid=1000\nfileMode=0640")
	f.Add("cacheSize=1e3\nnegativeMetadataTTL=0\nreadOnly=t\nunknown=1")
	f.Add("bucket=b12\nreadOnly=true\nopenMode=kernel\ncacheBlockSize=8Ki\nmaxParallelFetches=3")
	f.Fuzz(func(t *testing.T, in string) {
		attrs := map[string]string{}
		for l := range strings.SplitSeq(in, "\n") {
			if k, v, ok := strings.Cut(l, "="); ok {
				attrs[k] = v
			}
		}
		s, _, err := ParseAttributes(attrs)
		if err != nil {
			if !errors.Is(err, ErrInvalid) {
				t.Fatalf("error does not wrap ErrInvalid: %v", err)
			}
			return
		}
		b, other, err := ParseAttributes(s.Attributes())
		if err != nil || len(other) > 0 {
			t.Fatalf("ParseAttributes(%+v.Attributes()) = %v, other keys %q", s, err, other)
		}
		if !reflect.DeepEqual(s, b) {
			t.Fatalf("round trip changed\n%#v\ninto\n%#v", s, b)
		}
		if s.Bucket == "" {
			s.Bucket = "b12"
		}
		s.ReadOnly = true // openMode=kernel needs a read-only mount, which the access mode may give
		if err := s.Validate(); err != nil {
			t.Fatalf("ParseAttributes accepted a spec Validate refuses: %v", err)
		}
	})
}

//go:build k8se2e

package k8s

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/basin-csi/basin/pkg/objstore"
	"github.com/basin-csi/basin/pkg/objstore/backend"
)

// storeConfig reaches bucket on the cluster's MinIO (backend s3) or
// fake-gcs-server (gcs).
func storeConfig(kind objstore.Backend, bucket string) (objstore.Config, objstore.Credentials) {
	if kind == objstore.BackendGCS {
		return objstore.Config{Backend: kind, Bucket: bucket, Endpoint: env.GCSEndpoint}, objstore.Credentials{}
	}
	return objstore.Config{Backend: objstore.BackendS3, Bucket: bucket, Endpoint: env.MinIOEndpoint, Region: "us-east-1", PathStyle: true},
		objstore.Credentials{AccessKeyID: env.AccessKey, SecretAccessKey: env.SecretKey}
}

// openBucket opens a bucket of the cluster's MinIO, creating it if asked.
func openBucket(t *testing.T, bucket string, create bool) objstore.Store {
	t.Helper()
	return openBucketOf(t, objstore.BackendS3, bucket, create)
}

// openBucketOf opens a bucket of the cluster's store of kind.
func openBucketOf(t *testing.T, kind objstore.Backend, bucket string, create bool) objstore.Store {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cfg, creds := storeConfig(kind, bucket)
	if create {
		admin, err := backend.OpenAdmin(ctx, cfg, creds)
		if err != nil {
			t.Fatal(err)
		}
		defer func() { _ = admin.Close() }()
		if err := admin.CreateBucket(ctx, bucket); err != nil {
			t.Fatalf("create bucket %s: %v", bucket, err)
		}
	}
	s, err := backend.Open(ctx, cfg, creds)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

// bucketExists asks the cluster's store of kind.
func bucketExists(t *testing.T, kind objstore.Backend, bucket string) bool {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cfg, creds := storeConfig(kind, bucket)
	admin, err := backend.OpenAdmin(ctx, cfg, creds)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = admin.Close() }()
	ok, err := admin.BucketExists(ctx, bucket)
	if err != nil {
		t.Fatal(err)
	}
	return ok
}

// keys lists every key under prefix.
func keys(t *testing.T, s objstore.Store, prefix string) []string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var out []string
	err := objstore.ListAll(ctx, s, objstore.ListOptions{Prefix: prefix}, func(p objstore.ListPage) error {
		for _, o := range p.Objects {
			out = append(out, o.Key)
		}
		return nil
	})
	if err != nil {
		t.Fatalf("list %q: %v", prefix, err)
	}
	return out
}

// objectSum reads an object and returns its SHA-256 in hex.
func objectSum(t *testing.T, s objstore.Store, key string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	r, _, err := s.Read(ctx, key, objstore.ReadOptions{Length: -1})
	if err != nil {
		t.Fatalf("read %s: %v", key, err)
	}
	defer func() { _ = r.Close() }()
	h := sha256.New()
	if _, err := io.Copy(h, r); err != nil {
		t.Fatalf("read %s: %v", key, err)
	}
	return hex.EncodeToString(h.Sum(nil))
}

// putObjects writes n objects prefix/NNNNN of size bytes each (content
// derived from the key) with 16 uploads in flight, and returns their
// SHA-256 sums by key.
func putObjects(t *testing.T, s objstore.Store, prefix string, n, size int) map[string]string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	sums := make(map[string]string, n)
	type done struct {
		key, sum string
		err      error
	}
	jobs, results := make(chan int), make(chan done)
	for w := 0; w < 16; w++ {
		go func() {
			for i := range jobs {
				key := fmt.Sprintf("%s%05d", prefix, i)
				body := content(key, size)
				_, err := s.Put(ctx, key, bytes.NewReader(body), objstore.PutOptions{Size: int64(len(body))})
				sum := sha256.Sum256(body)
				results <- done{key, hex.EncodeToString(sum[:]), err}
			}
		}()
	}
	go func() {
		for i := 0; i < n; i++ {
			jobs <- i
		}
		close(jobs)
	}()
	for i := 0; i < n; i++ {
		d := <-results
		if d.err != nil {
			t.Fatalf("put %s: %v", d.key, d.err)
		}
		sums[d.key] = d.sum
	}
	return sums
}

// content is size bytes derived from key.
func content(key string, size int) []byte {
	b := make([]byte, 0, size+sha256.Size)
	seed := sha256.Sum256([]byte(key))
	for len(b) < size {
		b = append(b, seed[:]...)
		seed = sha256.Sum256(seed[:])
	}
	return b[:size]
}

// volumeBucket splits a Basin volume handle into backend, bucket and
// prefix (<backend>/<flags>/<region>/<endpoint fingerprint>/<bucket>/<prefix>).
func volumeBucket(t *testing.T, handle string) (backend objstore.Backend, bucket, prefix string) {
	t.Helper()
	parts := strings.SplitN(handle, "/", 6)
	if len(parts) != 6 {
		t.Fatalf("volume handle %q: not a Basin volume ID", handle)
	}
	return objstore.Backend(parts[0]), parts[4], parts[5]
}

// credentialsSecret is a secret of the cluster MinIO's keys and its
// address as pods reach it, in basin-system, deleted when the test ends.
func credentialsSecret(t *testing.T, name string) {
	t.Helper()
	apply(t, secretYAML(name, env.AccessKey, env.SecretKey, env.MinIOClusterEndpoint))
	t.Cleanup(func() { _, _ = kubectlErr("-n", "basin-system", "delete", "secret", name, "--ignore-not-found") })
}

// gcsSecret is a secret naming the cluster's fake-gcs-server, which
// takes no credentials, deleted when the test ends.
func gcsSecret(t *testing.T, name string) {
	t.Helper()
	apply(t, fmt.Sprintf(`apiVersion: v1
kind: Secret
metadata:
  name: %s
  namespace: basin-system
type: Opaque
stringData:
  endpoint: %q
`, name, env.GCSEndpoint))
	t.Cleanup(func() { _, _ = kubectlErr("-n", "basin-system", "delete", "secret", name, "--ignore-not-found") })
}

func secretYAML(name, key, secret, endpoint string) string {
	return fmt.Sprintf(`apiVersion: v1
kind: Secret
metadata:
  name: %s
  namespace: basin-system
type: Opaque
stringData:
  accessKeyID: %q
  secretAccessKey: %q
  endpoint: %q
  region: us-east-1
`, name, key, secret, endpoint)
}

// storageClass is a StorageClass of Basin's whose three secrets are
// secret, deleted when the test ends; params are extra parameters.
func storageClass(t *testing.T, name, secret string, params map[string]string) {
	t.Helper()
	var b strings.Builder
	fmt.Fprintf(&b, `apiVersion: storage.k8s.io/v1
kind: StorageClass
metadata:
  name: %s
provisioner: basin.csi.dev
reclaimPolicy: Delete
volumeBindingMode: Immediate
parameters:
`, name)
	if _, ok := params["backend"]; !ok {
		b.WriteString("  backend: s3\n  pathStyle: \"true\"\n")
	}
	for _, kind := range []string{"provisioner", "node-stage", "node-publish"} {
		fmt.Fprintf(&b, "  csi.storage.k8s.io/%s-secret-name: %s\n  csi.storage.k8s.io/%s-secret-namespace: basin-system\n", kind, secret, kind)
	}
	for k, v := range params {
		fmt.Fprintf(&b, "  %s: %q\n", k, v)
	}
	apply(t, b.String())
	t.Cleanup(func() { _, _ = kubectlErr("delete", "storageclass", name, "--ignore-not-found") })
}

// bucketRequests is the number of requests of the S3 API call api
// ("GetObject", "PutObject", ...) the cluster's MinIO served on bucket
// since it started, from its own per-bucket metrics (v3, counted as each
// request ends; cluster.sh makes them readable without a token).
func bucketRequests(t *testing.T, bucket, api string) float64 {
	t.Helper()
	fams := scrape(t, env.MinIOEndpoint+"/minio/metrics/v3/bucket/api/"+bucket)
	return sample(fams, "minio_bucket_api_total", map[string]string{"bucket": bucket, "name": api})
}

//go:build k8se2e

package k8s

import (
	"strings"
	"testing"
	"time"
)

// writeCheckpoint writes 48 MiB of random data, fsyncs it and prints its
// SHA-256; readCheckpoint prints the SHA-256 of what it reads back.
const (
	// The writer first reuses names it just removed (issue 32): a
	// directory made and removed, then a file of that name; a file
	// removed, then a directory; a tree removed, then a file. Each must
	// work at once, within the metadata TTL.
	writeCheckpoint = `cd /data && mkdir d && rmdir d && echo x > d && [ "$(cat d)" = x ] &&
  rm d && mkdir d && rmdir d && mkdir -p t/a/b && echo y > t/a/b/f && rm -r t &&
  echo z > t && [ "$(cat t)" = z ] && rm t && echo reuse=ok
mkdir -p /data/ckpt
dd if=/dev/urandom of=/data/ckpt/step-1.pt bs=1M count=48 conv=fsync 2>/dev/null
echo sum=$(sha256sum /data/ckpt/step-1.pt | cut -d' ' -f1)`
	readCheckpoint = `echo sum=$(sha256sum /data/ckpt/step-1.pt | cut -d' ' -f1)`
)

// TestDynamicProvisioning is scenario 1: StorageClasses in prefix and
// bucket mode on MinIO and in bucket mode on fake-gcs-server, RWX claims,
// a writer pod and a reader pod, the object in the bucket, and the data
// removed or kept by the reclaim choice.
func TestDynamicProvisioning(t *testing.T) {
	scenario(t, "dynamic-provisioning")
	ns := namespace(t, "e2e-provision")
	credentialsSecret(t, "e2e-provision-creds")
	openBucket(t, "e2e-shared", true)
	storageClass(t, "e2e-prefix-delete", "e2e-provision-creds", map[string]string{
		"provisioning": "prefix", "bucket": "e2e-shared", "prefix": "vols", "reclaim": "delete"})
	storageClass(t, "e2e-bucket-delete", "e2e-provision-creds", map[string]string{"provisioning": "bucket", "reclaim": "delete"})
	storageClass(t, "e2e-bucket-retain", "e2e-provision-creds", map[string]string{"provisioning": "bucket", "reclaim": "retain"})
	gcsSecret(t, "e2e-provision-gcs")
	storageClass(t, "e2e-gcs-bucket-delete", "e2e-provision-gcs", map[string]string{
		"backend": "gcs", "endpoint": env.GCSEndpoint, "provisioning": "bucket", "reclaim": "delete"})

	cases := []struct {
		claim, class string
		keep         bool
	}{
		{"prefix-delete", "e2e-prefix-delete", false},
		{"bucket-delete", "e2e-bucket-delete", false},
		{"bucket-retain", "e2e-bucket-retain", true},
		{"gcs-bucket-delete", "e2e-gcs-bucket-delete", false},
	}
	for _, c := range cases {
		apply(t, pvc(ns, c.claim, c.class, "ReadWriteMany"))
	}
	handles := map[string]string{}
	for _, c := range cases {
		pv := waitBound(t, ns, c.claim)
		handles[c.claim] = jsonpath("", "pv/"+pv, "{.spec.csi.volumeHandle}")
		runPod(t, ns, pod{Name: "write-" + c.claim, Claim: c.claim, Script: writeCheckpoint})
	}
	for _, c := range cases {
		w := mustSucceed(t, ns, "write-"+c.claim, 3*time.Minute)
		want := logValue(w.Log, "sum")
		if got := logValue(w.Log, "reuse"); got != "ok" {
			t.Errorf("%s: reusing removed names failed in the writer pod:\n%s", c.claim, w.Log)
		}
		runPod(t, ns, pod{Name: "read-" + c.claim, Claim: c.claim, Script: readCheckpoint, ReadOnly: true})
		r := mustSucceed(t, ns, "read-"+c.claim, 3*time.Minute)
		if got := logValue(r.Log, "sum"); len(want) != 64 || got != want {
			t.Errorf("%s: the reader saw %q, the writer wrote %q", c.claim, got, want)
		}
		kind, bucket, prefix := volumeBucket(t, handles[c.claim])
		s := openBucketOf(t, kind, bucket, false)
		if got := objectSum(t, s, prefix+"ckpt/step-1.pt"); got != want {
			t.Errorf("%s: object %s/%sckpt/step-1.pt has sum %s, the writer wrote %s", c.claim, bucket, prefix, got, want)
		}
	}
	for _, c := range cases {
		kubectl(t, "-n", ns, "delete", "pod", "write-"+c.claim, "read-"+c.claim, "--wait=true")
		pv := jsonpath(ns, "pvc/"+c.claim, "{.spec.volumeName}")
		kubectl(t, "-n", ns, "delete", "pvc", c.claim, "--wait=true")
		waitFor(t, "volume "+pv+" deleted", 2*time.Minute, func() bool {
			_, err := kubectlErr("get", "pv", pv)
			return err != nil && strings.Contains(err.Error(), "NotFound")
		})
	}
	for _, c := range cases {
		kind, bucket, prefix := volumeBucket(t, handles[c.claim])
		switch {
		case c.keep && !bucketExists(t, kind, bucket):
			t.Errorf("%s: reclaim retain, yet bucket %s is gone", c.claim, bucket)
		case c.keep:
			if k := keys(t, openBucketOf(t, kind, bucket, false), prefix); len(k) == 0 {
				t.Errorf("%s: reclaim retain, yet the data is gone", c.claim)
			}
		case prefix == "" && bucketExists(t, kind, bucket):
			t.Errorf("%s: reclaim delete, yet bucket %s is still there", c.claim, bucket)
		case prefix != "":
			if k := keys(t, openBucketOf(t, kind, bucket, false), prefix); len(k) != 0 {
				t.Errorf("%s: reclaim delete, yet %s/%s still holds %v", c.claim, bucket, prefix, k)
			}
		}
	}
}

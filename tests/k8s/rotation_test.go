//go:build k8se2e

package k8s

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/basin-csi/basin/internal/testserver"
	"github.com/basin-csi/basin/pkg/objstore"
	"github.com/basin-csi/basin/pkg/objstore/backend"
)

// TestCredentialRotation is scenario 5: the store's keys change (MinIO
// restarted with new root credentials, the old ones refused) and so does
// the secret; a running pod goes on reading files it has not read before
// once kubelet republished the volume, without a restart of the pod or of
// the volume's FUSE process.
func TestCredentialRotation(t *testing.T) {
	scenario(t, "credential-rotation")
	ns := namespace(t, "e2e-rotate")
	// Its own server (its keys change), on the control plane's address
	// like the cluster's MinIO, where the node plugins reach it.
	m := testserver.NewMinIOOn(t, env.ControlPlaneIP)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cfg := objstore.Config{Backend: objstore.BackendS3, Bucket: "rotate", Endpoint: m.Endpoint, Region: m.Region, PathStyle: true}
	admin, err := backend.OpenAdmin(ctx, cfg, objstore.Credentials{AccessKeyID: m.AccessKey, SecretAccessKey: m.SecretKey})
	if err != nil {
		t.Fatal(err)
	}
	if err := admin.CreateBucket(ctx, "rotate"); err != nil {
		t.Fatal(err)
	}
	_ = admin.Close()
	s, err := backend.Open(ctx, cfg, objstore.Credentials{AccessKeyID: m.AccessKey, SecretAccessKey: m.SecretKey})
	if err != nil {
		t.Fatal(err)
	}
	before, after := putObjects(t, s, "a/", 20, 32<<10), putObjects(t, s, "b/", 20, 32<<10)
	_ = s.Close()

	secret := func(key, sec string) { apply(t, secretYAML("e2e-rotate-creds", key, sec, m.Endpoint)) }
	secret(m.AccessKey, m.SecretKey)
	t.Cleanup(func() {
		_, _ = kubectlErr("-n", "basin-system", "delete", "secret", "e2e-rotate-creds", "--ignore-not-found")
	})
	const handle = "e2e-rotate-vol"
	staticVolumeWithSecret(t, ns, "e2e-rotate", handle, "rotate", "", "ReadOnlyMany", nil)

	// Reads a/ now; once told, reads b/, each file retried until the new
	// keys arrive (kubelet republishes every sync period).
	script := `echo a=$( (for i in $(seq 0 19); do sha256sum /data/a/$(printf %05d $i); done) | sha256sum | cut -d' ' -f1)
echo PHASE1
while [ ! -e /tmp/go ]; do usleep 200000; done
n=0
for i in $(seq 0 19); do
  f=/data/b/$(printf %05d $i)
  until sha256sum $f >> /tmp/b 2>/tmp/err; do
    n=$((n+1)); [ $n -lt 600 ] || { cat /tmp/err; exit 1; }; usleep 250000
  done
done
echo retries=$n
echo b=$(sha256sum < /tmp/b | cut -d' ' -f1)`
	runPod(t, ns, pod{Name: "reader", Claim: "e2e-rotate", Script: script, ReadOnly: true})
	waitLog(t, ns, "reader", "PHASE1", 2*time.Minute)
	pids := fuseProcesses(t, handle)

	m.Stop()
	m.SetRootCredentials("rotated-key-2", "rotated-secret-key-2")
	if err := m.Start(); err != nil {
		t.Fatal(err)
	}
	// The pod tries the new files with the old keys first: they must be
	// refused until the secret changed and kubelet republished.
	kubectl(t, "-n", ns, "exec", "reader", "--", "touch", "/tmp/go")
	time.Sleep(5 * time.Second)
	secret(m.AccessKey, m.SecretKey)
	r := mustSucceed(t, ns, "reader", 4*time.Minute)

	if got, want := logValue(r.Log, "a"), digest(sumsListing("/data/a", "a/", before)); got != want {
		t.Errorf("before the rotation the pod read %s, want %s", got, want)
	}
	if got, want := logValue(r.Log, "b"), digest(sumsListing("/data/b", "b/", after)); got != want {
		t.Errorf("after the rotation the pod read %s, want %s", got, want)
	}
	if r.Restarts != 0 {
		t.Errorf("the pod restarted %d times", r.Restarts)
	}
	if now := fuseProcesses(t, handle); len(pids) != 1 || len(now) != 0 && now[0] != pids[0] {
		t.Errorf("the volume's FUSE process changed from %v to %v", pids, now)
	}
	if n, _ := strconv.Atoi(logValue(r.Log, "retries")); n < 1 {
		t.Errorf("the pod read the new files at once, with the old keys: the rotation was not exercised")
	}
	t.Logf("the pod retried %s times (250 ms apart) until the new keys took effect", logValue(r.Log, "retries"))
}

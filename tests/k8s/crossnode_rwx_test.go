//go:build k8se2e

package k8s

import (
	"fmt"
	"strings"
	"testing"
	"time"
)

// rwxWriter writes FILES files of SIZE bytes and one of BIG MiB, named
// NAME-*, into /data/shared, made on the pod's local disk first, and
// prints the digest of their sums as the shell sees them there.
const rwxWriter = `mkdir /tmp/out
i=0; while [ $i -lt $FILES ]; do head -c $SIZE /dev/urandom > /tmp/out/$NAME-$(printf %03d $i); i=$((i+1)); done
dd if=/dev/urandom of=/tmp/out/$NAME-big bs=1M count=$BIG 2>/dev/null
echo sum=$(cd /tmp/out && sha256sum * | sha256sum | cut -d' ' -f1)
mkdir -p /data/shared
cp /tmp/out/* /data/shared/
echo WRITTEN`

// TestReadWriteManyAcrossNodes is scenario 2 between nodes: pods on two
// nodes write different files into one directory of a ReadWriteMany
// claim at the same time; a pod on the third node lists all of them and
// reads each byte-exact, and the bucket holds every one.
func TestReadWriteManyAcrossNodes(t *testing.T) {
	scenario(t, "rwx-across-nodes")
	a, b, c := threeNodes(t)
	ns := namespace(t, "e2e-xnode-rwx")
	credentialsSecret(t, "e2e-xnode-rwx-creds")
	s := openBucket(t, "e2e-xnode-rwx", true)
	storageClass(t, "e2e-xnode-rwx", "e2e-xnode-rwx-creds", map[string]string{"provisioning": "prefix", "bucket": "e2e-xnode-rwx"})
	apply(t, pvc(ns, "shared", "e2e-xnode-rwx", "ReadWriteMany"))
	pv := waitBound(t, ns, "shared")
	t.Cleanup(func() {
		// The dynamic volume goes while its provisioner secret is still here.
		_, _ = kubectlErr("-n", ns, "delete", "pod", "--all", "--wait=true")
		_, _ = kubectlErr("-n", ns, "delete", "pvc", "shared", "--wait=true")
		waitFor(t, "volume "+pv+" deleted", 90*time.Second, func() bool {
			_, err := kubectlErr("get", "pv", pv)
			return err != nil
		})
	})
	_, _, prefix := volumeBucket(t, jsonpath("", "pv/"+pv, "{.spec.csi.volumeHandle}"))

	const files, size, big = 100, 64 << 10, 16
	writers := map[string]string{"w1": a, "w2": b}
	for name, node := range writers {
		script := fmt.Sprintf("FILES=%d SIZE=%d BIG=%d NAME=%s\n", files, size, big, name) + rwxWriter
		runPod(t, ns, pod{Name: name, Claim: "shared", Script: script, Node: node})
	}
	want := map[string]string{}
	for name, node := range writers {
		r := mustSucceed(t, ns, name, 5*time.Minute)
		if got := podNode(ns, name); got != node {
			t.Errorf("writer %s ran on %s, want %s", name, got, node)
		}
		want[name] = logValue(r.Log, "sum")
	}

	runPod(t, ns, pod{Name: "reader", Claim: "shared", ReadOnly: true, Node: c, Script: `echo n=$(ls /data/shared | wc -l)
for w in w1 w2; do echo $w=$(cd /data/shared && sha256sum $w-* | sha256sum | cut -d' ' -f1); done`})
	r := mustSucceed(t, ns, "reader", 3*time.Minute)
	if got := podNode(ns, "reader"); got != c {
		t.Errorf("the reader ran on %s, want %s", got, c)
	}
	perWriter := files + 1
	if got := logValue(r.Log, "n"); got != fmt.Sprint(2*perWriter) {
		t.Errorf("%s lists %s files in the shared directory, want %d", c, got, 2*perWriter)
	}
	for name := range writers {
		if got := logValue(r.Log, name); got != want[name] {
			t.Errorf("%s read %s's files as %s, want %s", c, name, got, want[name])
		}
	}
	for name := range writers {
		k := keys(t, s, prefix+"shared/"+name+"-")
		if len(k) != perWriter {
			t.Errorf("the bucket holds %d of %s's files, want %d", len(k), name, perWriter)
		}
	}
	t.Logf("%s and %s wrote %d files each into one directory; %s read all: %s", a, b, perWriter, c, strings.TrimSpace(r.Log))
}

//go:build k8se2e

package k8s

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"
)

// TestSharedDataset is the "one copy per node" scenario: two teams'
// claims, in two namespaces, on PVs of the same bucket prefix (each with
// its own secret and volume handle), read on one node. The second team's
// cold epoch makes no data GET to the bucket (one FUSE process, named
// after the first PV, serves both from one cache); the node holds the
// data once (one cache's bytes, the second PV's VolumeCache naming the
// first); a third claim whose secret cannot read the bucket is refused
// at stage, with an event that says why.
func TestSharedDataset(t *testing.T) {
	scenario(t, "shared-dataset")
	nsA, nsB := namespace(t, "e2e-share-a"), namespace(t, "e2e-share-b")
	s := openBucket(t, "e2e-share", true)
	sums := putObjects(t, s, "train/", 150, 128<<10)
	const handleA, handleB, handleDenied = "e2e-share-a-vol", "e2e-share-b-vol", "e2e-share-denied-vol"
	attrs := map[string]string{"metadataTTL": "-1", "negativeMetadataTTL": "-1"}
	staticVolume(t, nsA, "e2e-share-a", handleA, "e2e-share", "", "ReadOnlyMany", attrs)
	staticVolume(t, nsB, "e2e-share-b", handleB, "e2e-share", "", "ReadOnlyMany", attrs)
	node := env.Nodes[0]
	want := digest(sumsListing("/data/train", "train/", sums))
	script := `echo sum=$(sha256sum /data/train/* | sha256sum | cut -d' ' -f1)
echo READY
sleep 3600`

	runPod(t, nsA, pod{Name: "reader", Claim: "e2e-share-a", Script: script, ReadOnly: true, Node: node})
	waitLog(t, nsA, "reader", "READY", 2*time.Minute)
	if got := logValue(kubectl(t, "-n", nsA, "logs", "reader"), "sum"); got != want {
		t.Errorf("team A's reader saw %s, want %s", got, want)
	}
	a := map[string]string{"volume": handleA, "op": "get"}
	getsBefore := sample(scrape(t, nodeMetrics(t, node)), "basin_bucket_requests_total", a)
	if getsBefore == 0 {
		t.Fatalf("team A's cold epoch made no GETs (basin_bucket_requests_total%v): the count below proves nothing", a)
	}

	runPod(t, nsB, pod{Name: "reader", Claim: "e2e-share-b", Script: script, ReadOnly: true, Node: node})
	waitLog(t, nsB, "reader", "READY", 2*time.Minute)
	if got := logValue(kubectl(t, "-n", nsB, "logs", "reader"), "sum"); got != want {
		t.Errorf("team B's reader saw %s, want %s", got, want)
	}
	m := scrape(t, nodeMetrics(t, node))
	if gets := sample(m, "basin_bucket_requests_total", a); gets != getsBefore {
		t.Errorf("team B's cold epoch made %v data GETs to the bucket, want 0", gets-getsBefore)
	}
	if up := sample(m, "basin_volume_scrape_up", map[string]string{"volume": handleB}); up != 0 {
		t.Errorf("a FUSE process of its own serves team B's volume (basin_volume_scrape_up %v)", up)
	}
	if pids := fuseProcessesOn(t, node, handleA); len(pids) != 1 {
		t.Errorf("%d FUSE processes serve the shared volumes on %s (%v), want 1", len(pids), node, pids)
	}
	if pids := volumeProcesses(t, handleB); len(pids) != 0 {
		t.Errorf("team B's volume has FUSE processes of its own: %v", pids)
	}

	// The node holds the data once: one cache's bytes, which both PVs'
	// VolumeCaches show, the second naming the first.
	used := sample(m, "basin_cache_used_bytes", map[string]string{"volume": handleA})
	t.Logf("team A's cold epoch: %v data GETs; team B's: %v; the shared cache: %v bytes for a dataset of %d",
		getsBefore, sample(m, "basin_bucket_requests_total", a)-getsBefore, used, 150*128<<10)
	if dataset := float64(150 * 128 << 10); used < dataset || used > 1.5*dataset {
		t.Errorf("the shared cache uses %v bytes for a dataset of %v", used, dataset)
	}
	if b := sample(m, "basin_cache_used_bytes", map[string]string{"volume": handleB}); b != 0 {
		t.Errorf("team B's volume has a cache of its own on the node (%v bytes)", b)
	}
	waitFor(t, "both PVs' VolumeCaches", 90*time.Second, func() bool {
		vb, okB := volumeCache(t, "e2e-share-b", node)
		_, okA := volumeCache(t, "e2e-share-a", node)
		return okA && okB && slices.Contains(vb.Status.SharedWith, "e2e-share-a")
	})
	vb, _ := volumeCache(t, "e2e-share-b", node)
	if vb.Status.CachedBytes < 150*128<<10 {
		t.Errorf("team B's VolumeCache shows %d cached bytes, want the dataset's", vb.Status.CachedBytes)
	}

	// A claim whose secret cannot read the bucket is refused at stage,
	// before it is bound to what the others cached.
	apply(t, secretYAML("e2e-share-denied-creds", env.AccessKey, "not-the-secret-key", env.MinIOClusterEndpoint))
	t.Cleanup(func() {
		_, _ = kubectlErr("-n", "basin-system", "delete", "secret", "e2e-share-denied-creds", "--ignore-not-found")
	})
	staticVolumeWithSecret(t, nsB, "e2e-share-denied", handleDenied, "e2e-share", "", "ReadOnlyMany", attrs)
	runPod(t, nsB, pod{Name: "denied", Claim: "e2e-share-denied", Script: script, ReadOnly: true, Node: node})
	var msg string
	waitFor(t, "a FailedMount event for the claim whose secret cannot read the bucket", 2*time.Minute, func() bool {
		msg = jsonpath(nsB, "events", `{range .items[?(@.involvedObject.name=="denied")]}{.reason}: {.message}{"\n"}{end}`)
		return strings.Contains(msg, "FailedMount") && strings.Contains(msg, "cannot list")
	})
	t.Logf("refused: %s", strings.TrimSpace(msg))
	if strings.Contains(msg, "not-the-secret-key") {
		t.Error("the event quotes the secret")
	}
	if ph := jsonpath(nsB, "pod/denied", "{.status.phase}"); ph != "Pending" {
		t.Errorf("the refused claim's pod is %s, want Pending", ph)
	}
	kubectl(t, "-n", nsB, "delete", "pod", "denied", "--wait=true")

	// Team A leaves: kubelet unstages its volume (a shared volume's
	// staging path must not look in use), and team B reads on from the
	// share, which keeps A's name. Team B leaves: the share ends.
	pid := fuseProcessesOn(t, node, handleA)
	kubectl(t, "-n", nsA, "delete", "pod", "reader", "--wait=true")
	waitFor(t, "team A's volume unstaged", 90*time.Second, func() bool { return !stagedOn(node, handleA) })
	if now := fuseProcessesOn(t, node, handleA); len(now) != 1 || len(pid) != 1 || now[0] != pid[0] {
		t.Errorf("the share's FUSE process changed from %v to %v when team A left", pid, now)
	}
	kubectl(t, "-n", nsB, "exec", "reader", "--", "sh", "-c", "cat /data/train/* > /dev/null")
	kubectl(t, "-n", nsB, "delete", "pod", "reader", "--wait=true")
	waitFor(t, "the share ended with its last volume", 90*time.Second, func() bool { return len(volumeProcesses(t, handleA)) == 0 })
}

// stagedOn reports whether kubelet on node holds the volume with handle
// staged: its staging directory (kubelet's
// plugins/kubernetes.io/csi/<driver>/<sha256 of the handle>), which
// kubelet removes once NodeUnstageVolume succeeded.
func stagedOn(node, handle string) bool {
	dir := fmt.Sprintf("%s/plugins/kubernetes.io/csi/basin.csi.dev/%s", env.KubeletDir, digest(handle))
	_, err := nodeExecErr(node, "test", "-e", dir+"/vol_data.json")
	return err == nil
}

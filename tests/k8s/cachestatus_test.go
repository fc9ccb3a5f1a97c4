//go:build k8se2e

package k8s

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	basinv1 "github.com/basin-csi/basin/pkg/api/v1alpha1"
)

// volumeCache reads the VolumeCache of (pv, node) by its labels; ok is
// false while there is none.
func volumeCache(t *testing.T, pv, node string) (vc basinv1.VolumeCache, ok bool) {
	t.Helper()
	out, err := kubectlErr("get", "volumecaches", "-o", "json",
		"-l", basinv1.LabelVolume+"="+pv+","+basinv1.LabelNode+"="+node)
	if err != nil {
		t.Logf("get volumecaches: %v", err)
		return vc, false
	}
	var list basinv1.VolumeCacheList
	if err := json.Unmarshal([]byte(out), &list); err != nil {
		t.Fatalf("decode volumecaches: %v", err)
	}
	if len(list.Items) > 1 {
		t.Fatalf("%d VolumeCaches for %s on %s, want one", len(list.Items), pv, node)
	}
	if len(list.Items) == 0 {
		return vc, false
	}
	return list.Items[0], true
}

// cacheWrites is node's node plugin's count of VolumeCache writes.
func cacheWrites(t *testing.T, node string) float64 {
	return sample(scrape(t, nodeMetrics(t, node)), "basin_cachestatus_writes_total", nil)
}

// TestCacheStatus is the cache status scenario: a pod reads a dataset on
// the first node; within a minute the VolumeCache of (its PV, that node)
// shows what the
// cache itself counts; kubectl prints its columns; a quiet volume costs
// no writes; a second read moves its last use; a new pod of the volume
// is preferred onto the node by the placement webhook; deleting the pod,
// claim and PV deletes it.
func TestCacheStatus(t *testing.T) {
	scenario(t, "cache-status")
	ns := namespace(t, "e2e-cachestatus")
	clusterNode := env.Nodes[0]
	const (
		pv      = "e2e-cachestatus"
		handle  = "e2e-cachestatus-vol"
		objects = 20
		size    = 256 << 10
	)
	s := openBucket(t, "e2e-cachestatus", true)
	putObjects(t, s, "data/", objects, size)
	staticVolume(t, ns, pv, handle, "e2e-cachestatus", "", "ReadOnlyMany", map[string]string{"metadataTTL": "-1", "negativeMetadataTTL": "-1", "warmup": "/"})

	runPod(t, ns, pod{Name: "reader", Claim: pv, ReadOnly: true, Node: clusterNode, Script: "cat /data/data/* > /dev/null\necho READY\nsleep 3600"})
	waitLog(t, ns, "reader", "READY", 2*time.Minute)
	read := time.Now()

	// Within a minute of the read, the object says what the cache's own
	// metrics say (the FUSE process's, through the node plugin), and the
	// dataset's size that the warmup of the whole volume (the warmup
	// attribute "/", run by the node plugin after the stage) found.
	vol := map[string]string{"volume": handle}
	var vc basinv1.VolumeCache
	var used, cached float64
	waitFor(t, "the VolumeCache to show the cache's own figures", 60*time.Second, func() bool {
		var ok bool
		vc, ok = volumeCache(t, pv, clusterNode)
		m := scrape(t, nodeMetrics(t, clusterNode))
		used, cached = sample(m, "basin_cache_used_bytes", vol), sample(m, "basin_cache_objects", vol)
		return ok && cached == objects && float64(vc.Status.CachedBytes) == used && float64(vc.Status.CachedObjects) == cached &&
			vc.Status.DatasetBytes != nil
	})
	t.Logf("VolumeCache %s after %v: cachedBytes=%d (%s) cachedObjects=%d; the cache: used=%v objects=%v; the dataset: %d bytes",
		vc.Name, time.Since(read).Round(time.Second), vc.Status.CachedBytes, vc.Status.CachedSize, vc.Status.CachedObjects, used, cached, objects*size)
	if d := int64(objects * size); vc.Status.CachedBytes < d || vc.Status.CachedBytes > d+objects*64<<10 {
		t.Errorf("cachedBytes = %d for a dataset of %d bytes read whole", vc.Status.CachedBytes, d)
	}
	if st := vc.Status; *st.DatasetBytes != objects*size || st.DatasetObjects == nil || *st.DatasetObjects != objects ||
		st.CachedPercent == nil || *st.CachedPercent != 100 {
		t.Errorf("dataset %v bytes, %v objects, %v%% cached; want %d, %d, 100%%", *st.DatasetBytes, st.DatasetObjects, st.CachedPercent, objects*size, objects)
	}
	if vc.Spec.VolumeHandle != handle || vc.Spec.NodeName != clusterNode || vc.Spec.VolumeName != pv {
		t.Errorf("spec = %+v", vc.Spec)
	}
	if len(vc.OwnerReferences) != 1 || vc.OwnerReferences[0].Kind != "Node" || vc.OwnerReferences[0].Name != clusterNode {
		t.Errorf("owner references = %+v, want the Node %s", vc.OwnerReferences, clusterNode)
	}
	if vc.Status.LastUseTime == nil || vc.Status.LastUseTime.Time.Before(read.Add(-2*time.Minute)) {
		t.Errorf("lastUseTime = %v, want about %v", vc.Status.LastUseTime, read)
	}
	if vc.Status.CapacityBytes <= 0 {
		t.Errorf("capacityBytes = %d", vc.Status.CapacityBytes)
	}

	table := kubectl(t, "get", "volumecaches", "-l", basinv1.LabelVolume+"="+pv)
	t.Logf("kubectl get volumecaches:\n%s", table)
	lines := strings.Split(strings.TrimSpace(table), "\n")
	if len(lines) != 2 || strings.Join(strings.Fields(lines[0]), " ") != "NAME VOLUME NODE CACHED OBJECTS PERCENT LAST-USE AGE" {
		t.Fatalf("kubectl get volumecaches printed:\n%s", table)
	}
	row := strings.Fields(lines[1])
	if row[0] != vc.Name || row[1] != pv || row[2] != clusterNode || row[3] != vc.Status.CachedSize || row[4] != fmt.Sprint(objects) || row[5] != "100" {
		t.Errorf("row %q, want %s %s %s %s %d 100 ...", lines[1], vc.Name, pv, clusterNode, vc.Status.CachedSize, objects)
	}

	// A quiet volume: over more than one report interval (30s), no write
	// of its VolumeCache (its resourceVersion stays). The node's write
	// counter is logged, not judged: it also counts the VolumeCaches of
	// other volumes on the node, which earlier scenarios' ends may still
	// touch on a loaded machine (a fresh-clone run counted 1 write here).
	// The window starts a report interval after the read, so that the
	// read's own last use is reported before it.
	waitFor(t, "a report interval after the read", 40*time.Second, func() bool { return time.Since(read) > 35*time.Second })
	vc, _ = volumeCache(t, pv, clusterNode)
	quiet0, quietStart, rv0 := cacheWrites(t, clusterNode), time.Now(), vc.ResourceVersion
	waitFor(t, "a quiet report interval", 40*time.Second, func() bool { return time.Since(quietStart) > 35*time.Second })
	quiet := cacheWrites(t, clusterNode) - quiet0
	if now, _ := volumeCache(t, pv, clusterNode); now.ResourceVersion != rv0 {
		t.Errorf("the VolumeCache was written in %v without reads (resourceVersion %s -> %s; the node's writes: %v), want no write",
			time.Since(quietStart).Round(time.Second), rv0, now.ResourceVersion, quiet)
	}

	// A second read, a second (the API's resolution) after the first:
	// its last use moves.
	before := vc.Status.LastUseTime.Time
	busy0 := cacheWrites(t, clusterNode)
	kubectl(t, "-n", ns, "exec", "reader", "--", "sh", "-c", "cat /data/data/* > /dev/null")
	waitFor(t, "lastUseTime to move after the second read", 60*time.Second, func() bool {
		vc, _ = volumeCache(t, pv, clusterNode)
		return vc.Status.LastUseTime != nil && vc.Status.LastUseTime.After(before)
	})
	t.Logf("lastUseTime %s -> %s; VolumeCache writes by the node plugin: %v while quiet for 35s, %v for the second read",
		before.Format(time.RFC3339), vc.Status.LastUseTime.Format(time.RFC3339), quiet, cacheWrites(t, clusterNode)-busy0)

	// A busy volume (read without a pause for 65s): a status write per
	// report interval at most, two or three in all.
	busy0 = cacheWrites(t, clusterNode)
	kubectl(t, "-n", ns, "exec", "reader", "--", "sh", "-c",
		"end=$(($(date +%s)+65)); while [ $(date +%s) -lt $end ]; do cat /data/data/* > /dev/null; done")
	busy := cacheWrites(t, clusterNode) - busy0
	t.Logf("VolumeCache writes by the node plugin during 65s of reads: %v", busy)
	if busy < 1 || busy > 3 {
		t.Errorf("%v VolumeCache writes during 65s of reads, want 1 to 3 (one per 30s interval at most)", busy)
	}

	// The chain end to end: a new pod of the volume gets the placement
	// webhook's preference for this node from this real report (the
	// webhook reads VolumeCaches through its informer: allow it to catch up).
	var note, terms string
	waitFor(t, "a new pod of the volume to be preferred onto "+clusterNode, 30*time.Second, func() bool {
		_, _ = kubectlErr("-n", ns, "delete", "pod", "placed", "--ignore-not-found", "--wait=true")
		runPod(t, ns, pod{Name: "placed", Claim: pv, ReadOnly: true, Script: "true"})
		note = jsonpath(ns, "pod/placed", `{.metadata.annotations.basin\.csi\.dev/cache-affinity}`)
		terms = jsonpath(ns, "pod/placed", "{.spec.affinity.nodeAffinity.preferredDuringSchedulingIgnoredDuringExecution}")
		return strings.HasPrefix(note, "preferred "+clusterNode+" ")
	})
	t.Logf("a new pod of the volume: annotation %q, preferred terms %s", note, terms)
	if !strings.Contains(terms, `"values":["`+clusterNode+`"]`) || !strings.Contains(terms, `"weight":100`) {
		t.Errorf("preferred terms %s, want weight 100 for %s (100%% cached)", terms, clusterNode)
	}
	kubectl(t, "-n", ns, "delete", "pod", "placed", "--wait=true")

	kubectl(t, "-n", ns, "delete", "pod", "reader", "--wait=true")
	kubectl(t, "-n", ns, "delete", "pvc", pv, "--wait=true")
	kubectl(t, "delete", "pv", pv, "--wait=true")
	gone := time.Now()
	waitFor(t, "the VolumeCache to go with its PV", 60*time.Second, func() bool {
		_, ok := volumeCache(t, pv, clusterNode)
		return !ok
	})
	t.Logf("VolumeCache deleted %v after its PV", time.Since(gone).Round(time.Second))
}

// TestCacheStatusPolicy: the node plugin's service account, with a token
// bound to its pod on the first node, writes VolumeCaches of that node
// only, not of another; a token bound to no pod writes none.
func TestCacheStatusPolicy(t *testing.T) {
	scenario(t, "cache-status-policy")
	clusterNode := env.Nodes[0]
	nodePod := runningPod(t, "basin-node", clusterNode).Name
	bound := kubeconfigWithToken(t, "bound", strings.TrimSpace(kubectl(t, "-n", "basin-system", "create", "token", "basin-node",
		"--bound-object-kind", "Pod", "--bound-object-name", nodePod, "--duration", "10m")))
	unbound := kubeconfigWithToken(t, "unbound", strings.TrimSpace(kubectl(t, "-n", "basin-system", "create", "token", "basin-node", "--duration", "10m")))

	// A PersistentVolume for the objects to name, so that the
	// orchestrator's clean-up leaves them alone, and another node: the
	// second real one, or on a one-node cluster a Node object without a
	// kubelet (unschedulable, no kubernetes.io/os label: no DaemonSet pod
	// of Basin goes there).
	apply(t, `apiVersion: v1
kind: PersistentVolume
metadata:
  name: e2e-policy
spec:
  capacity: {storage: 1Gi}
  accessModes: [ReadOnlyMany]
  persistentVolumeReclaimPolicy: Retain
  storageClassName: ""
  csi: {driver: basin.csi.dev, volumeHandle: e2e-policy-none}
`)
	t.Cleanup(func() { _, _ = kubectlErr("delete", "pv", "e2e-policy", "--ignore-not-found", "--wait=false") })
	otherNode := "e2e-policy-node"
	if len(env.Nodes) > 1 {
		otherNode = env.Nodes[1]
	} else {
		apply(t, `apiVersion: v1
kind: Node
metadata:
  name: `+otherNode+`
spec:
  unschedulable: true
`)
		t.Cleanup(func() { _, _ = kubectlErr("delete", "node", otherNode, "--ignore-not-found", "--wait=false") })
	}

	object := func(pv, node string) string {
		return fmt.Sprintf(`apiVersion: basin.csi.dev/v1alpha1
kind: VolumeCache
metadata:
  name: e2e-policy-%[2]s
  labels: {%[3]s: %[1]s, %[4]s: %[2]s}
spec: {volumeName: %[1]s, nodeName: %[2]s}
`, pv, node, basinv1.LabelVolume, basinv1.LabelNode)
	}
	// kubectl as the node plugin: the later --kubeconfig wins.
	as := func(kubeconfig, stdin string, args ...string) (string, error) {
		return run(stdin, append([]string{"--kubeconfig", kubeconfig}, args...)...)
	}
	t.Cleanup(func() {
		_, _ = kubectlErr("delete", "volumecache", "e2e-policy-"+clusterNode, "e2e-policy-"+otherNode, "--ignore-not-found")
	})

	if out, err := as(bound, object("e2e-policy", otherNode), "create", "-f", "-"); err == nil || !strings.Contains(err.Error(), "basin-node-volumecaches") {
		t.Errorf("the node plugin of %s created a VolumeCache of %s: %s %v", clusterNode, otherNode, out, err)
	} else {
		t.Logf("refused as it should: %v", err)
	}
	if out, err := as(unbound, object("e2e-policy", clusterNode), "create", "-f", "-"); err == nil || !strings.Contains(err.Error(), "basin-node-volumecaches") {
		t.Errorf("a token bound to no pod created a VolumeCache: %s %v", out, err)
	}
	if out, err := as(bound, object("e2e-policy", clusterNode), "create", "-f", "-"); err != nil {
		t.Fatalf("the node plugin of %s could not create a VolumeCache of its node: %s %v", clusterNode, out, err)
	}
	kubectlIn(t, object("e2e-policy", otherNode), "create", "-f", "-")
	if out, err := as(bound, "", "delete", "volumecache", "e2e-policy-"+otherNode); err == nil || !strings.Contains(err.Error(), "basin-node-volumecaches") {
		t.Errorf("the node plugin of %s deleted a VolumeCache of %s: %s %v", clusterNode, otherNode, out, err)
	}
	if out, err := as(bound, "", "delete", "volumecache", "e2e-policy-"+clusterNode); err != nil {
		t.Errorf("the node plugin could not delete its own node's VolumeCache: %s %v", out, err)
	}
	if out, err := as(bound, "", "get", "secrets", "-n", "basin-system"); err == nil {
		t.Errorf("the node plugin read secrets: %s", out)
	}
}

// kubeconfigWithToken writes a kubeconfig for the cluster that
// authenticates with token (a file: a token is never an argument).
func kubeconfigWithToken(t *testing.T, name, token string) string {
	t.Helper()
	cfg, err := clientcmd.LoadFromFile(env.Kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	ctx := cfg.Contexts[cfg.CurrentContext]
	if ctx == nil {
		t.Fatalf("%s: no current context", env.Kubeconfig)
	}
	out := clientcmdapi.NewConfig()
	out.Clusters["c"] = cfg.Clusters[ctx.Cluster]
	out.AuthInfos["u"] = &clientcmdapi.AuthInfo{Token: token}
	out.Contexts["c"] = &clientcmdapi.Context{Cluster: "c", AuthInfo: "u"}
	out.CurrentContext = "c"
	p := filepath.Join(t.TempDir(), name+".kubeconfig")
	if err := clientcmd.WriteToFile(*out, p); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(p, 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

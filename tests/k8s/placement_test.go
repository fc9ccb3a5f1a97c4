//go:build k8se2e

package k8s

import (
	"fmt"
	"math"
	"sort"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
)

// The placement scenarios' nodes: warm is the node whose cache holds the
// volume, and the node the scheduler would rank last (the least
// allocatable, so the most allocated by a pod: LeastAllocated and
// BalancedAllocation both score it lowest).
var (
	warmNode   = fakeNode{Name: "e2e-warm", CPU: "4", Memory: "8Gi"}
	coldNodes  = []fakeNode{{Name: "e2e-cold-1", CPU: "32", Memory: "64Gi"}, {Name: "e2e-cold-2", CPU: "32", Memory: "64Gi"}}
	placementN = 10
)

const (
	cacheAffinityKey = "basin.csi.dev/cache-affinity"
	// webhookMetric is the placement webhook's latency histogram.
	webhookMetric = "basin_placement_webhook_duration_seconds"
)

// warmCacheOn says that node's cache holds all of pv, as the node plugin's
// reporter would after a warmup (a VolumeCache owned by the node). It is
// the only place the scenarios create one.
func warmCacheOn(t *testing.T, pv, node string) {
	t.Helper()
	name := pv + "." + node
	apply(t, fmt.Sprintf(`apiVersion: basin.csi.dev/v1alpha1
kind: VolumeCache
metadata:
  name: %[1]s
  labels: {basin.csi.dev/volume: %[2]s, basin.csi.dev/node: %[3]s}
  ownerReferences: [{apiVersion: v1, kind: Node, name: %[3]s, uid: %[4]s}]
spec: {volumeName: %[2]s, nodeName: %[3]s}
`, name, pv, node, jsonpath("", "node/"+node, "{.metadata.uid}")))
	t.Cleanup(func() { _, _ = kubectlErr("delete", "volumecache", name, "--ignore-not-found") })
	now := time.Now().UTC().Format(time.RFC3339)
	kubectl(t, "patch", "volumecache", name, "--subresource=status", "--type=merge", "-p", fmt.Sprintf(
		`{"status": {"cachedBytes": 1073741824, "cachedSize": "1Gi", "cachedObjects": 100, "datasetBytes": 1073741824, "datasetObjects": 100, "cachedPercent": 100, "lastUseTime": %q, "updateTime": %q}}`, now, now))
}

// placed creates a pod of claim that requires a fake node and requests
// cpu, waits until the scheduler binds it, force-deletes it and returns
// its node and its cache-affinity annotation. optOut labels it out.
func placed(t *testing.T, ns, name, claim, cpu string, optOut bool) (node, why string) {
	t.Helper()
	labels := "{}"
	if optOut {
		labels = fmt.Sprintf(`{%s: "false"}`, cacheAffinityKey)
	}
	apply(t, fmt.Sprintf(`apiVersion: v1
kind: Pod
metadata:
  name: %[1]s
  namespace: %[2]s
  labels: %[3]s
spec:
  terminationGracePeriodSeconds: 0
  tolerations: [{key: %[4]s, operator: Exists, effect: NoSchedule}]
  affinity:
    nodeAffinity:
      requiredDuringSchedulingIgnoredDuringExecution:
        nodeSelectorTerms:
          - matchExpressions: [{key: %[4]s, operator: In, values: ["true"]}]
  containers:
    - name: main
      image: basin.local/busybox:v1
      imagePullPolicy: Never
      command: ["sleep", "3600"]
      resources: {requests: {cpu: %[5]q, memory: 1Gi}}
      volumeMounts: [{name: data, mountPath: /data}]
  volumes:
    - name: data
      persistentVolumeClaim: {claimName: %[6]s}
`, name, ns, labels, fakeNodeLabel, cpu, claim))
	defer forceDeletePods(t, ns, name)
	waitFor(t, "pod "+name+" scheduled", 30*time.Second, func() bool {
		node = jsonpath(ns, "pod/"+name, "{.spec.nodeName}")
		return node != ""
	})
	why = jsonpath(ns, "pod/"+name, `{.metadata.annotations.basin\.csi\.dev/cache-affinity}`)
	// The pod's own required term is still there, beside ours.
	if got := jsonpath(ns, "pod/"+name, "{.spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[0].matchExpressions[0].key}"); got != fakeNodeLabel {
		t.Errorf("pod %s: its own required node affinity became %q", name, got)
	}
	return node, why
}

// warmVolume makes the fake nodes, a namespace and a static Basin volume
// of that name whose cache the warm node holds, and waits until the
// webhook prefers the warm node for it. Pods left in the namespace are
// force-deleted at the end.
func warmVolume(t *testing.T, name, volume string) (ns string) {
	t.Helper()
	ns = namespace(t, name)
	t.Cleanup(func() { forceDeletePods(t, ns) })
	fakeNodes(t, append([]fakeNode{warmNode}, coldNodes...)...)
	staticVolume(t, ns, volume, volume, "e2e-placement", volume+"/", "ReadOnlyMany", nil)
	warmCacheOn(t, volume, warmNode.Name)
	waitPreferred(t, ns, "probe", volume)
	return ns
}

// TestCacheAwarePlacement is scenarios a and b of cache-aware placement:
// a pod whose volume is cached on the warm node lands there every time;
// opted out by its label or by its StorageClass it is placed by the
// scheduler's own ranking (never the warm node, which ranks last); with
// the warm node full it schedules on another.
func TestCacheAwarePlacement(t *testing.T) {
	scenario(t, "cache-aware-placement")
	ns := warmVolume(t, "e2e-placement", "e2e-placement-data")
	h0 := scrape(t, controllerMetrics(t))

	// a. N of N on the warm node.
	for i := range placementN {
		node, why := placed(t, ns, fmt.Sprintf("warm-%d", i), "e2e-placement-data", "1", false)
		if node != warmNode.Name {
			t.Errorf("try %d: placed on %s, want %s (annotation %q)", i, node, warmNode.Name, why)
		}
		if want := "preferred " + warmNode.Name + " (weight 100: 100% of e2e-placement-data cached)"; why != want {
			t.Errorf("try %d: annotation %q, want %q", i, why, want)
		}
	}
	t.Logf("placed on %s in %d of %d tries", warmNode.Name, placementN, placementN)

	// a'. Opted out by the pod's label: untouched, the scheduler's order.
	where := map[string]int{}
	for i := range placementN / 2 {
		node, why := placed(t, ns, fmt.Sprintf("optout-pod-%d", i), "e2e-placement-data", "1", true)
		where[node]++
		if why != "" {
			t.Errorf("opted-out pod %d: annotated %q (the objectSelector should keep it from the webhook)", i, why)
		}
	}
	// a''. Opted out by the StorageClass: CreateVolume carries the
	// parameter into the PV, the webhook reads it there.
	credentialsSecret(t, "e2e-placement-creds")
	openBucket(t, "e2e-placement-sc", true)
	storageClass(t, "e2e-placement-optout", "e2e-placement-creds", map[string]string{
		"bucket": "e2e-placement-sc", "provisioning": "prefix", "cacheAffinity": "false"})
	apply(t, pvc(ns, "optout-class", "e2e-placement-optout", "ReadWriteMany"))
	pv := waitBound(t, ns, "optout-class")
	if got := jsonpath("", "pv/"+pv, "{.spec.csi.volumeAttributes.cacheAffinity}"); got != "false" {
		t.Fatalf("PV %s: volume attribute cacheAffinity %q, want false", pv, got)
	}
	warmCacheOn(t, pv, warmNode.Name)
	for i := range placementN / 2 {
		node, why := placed(t, ns, fmt.Sprintf("optout-class-%d", i), "optout-class", "1", false)
		where[node]++
		if !strings.HasPrefix(why, "opted out by the volume") {
			t.Errorf("storage-class opt-out %d: annotation %q", i, why)
		}
	}
	// The dynamic volume goes while its provisioner secret is still here.
	kubectl(t, "-n", ns, "delete", "pvc", "optout-class", "--wait=true")
	waitFor(t, "volume "+pv+" deleted", 90*time.Second, func() bool {
		_, err := kubectlErr("get", "pv", pv)
		return err != nil
	})
	t.Logf("opted-out pods placed: %v", where)
	if where[warmNode.Name] != 0 {
		t.Errorf("opted-out pods went to the warm node %d times: the scheduler's own order ranks it last", where[warmNode.Name])
	}

	// b. The warm node cannot fit the pod: it schedules elsewhere.
	node, why := placed(t, ns, "warm-full", "e2e-placement-data", "6", false)
	if node == warmNode.Name || node == "" {
		t.Errorf("a pod that does not fit the warm node was placed on %q", node)
	}
	if !strings.HasPrefix(why, "preferred "+warmNode.Name) {
		t.Errorf("warm-full: annotation %q, want a preference for %s", why, warmNode.Name)
	}
	t.Logf("with %s full: placed on %s", warmNode.Name, node)
	p50, p99, n := webhookQuantiles(h0, scrape(t, controllerMetrics(t)))
	t.Logf("webhook latency over %.0f pods: p50 ≤ %s, p99 ≤ %s (histogram bucket bounds)", n, p50, p99)
	if n < float64(placementN) {
		t.Errorf("the webhook's histogram counted %v decisions, want at least %d", n, placementN)
	}
}

// webhookQuantiles reads p50 and p99 of the webhook's latency between two
// scrapes as the upper bounds of their histogram buckets (-1: above the
// last bound), and the number of decisions between them.
func webhookQuantiles(before, after map[string]*dto.MetricFamily) (p50, p99 time.Duration, n float64) {
	read := func(f map[string]*dto.MetricFamily) (map[float64]float64, float64) {
		out, count := map[float64]float64{}, 0.0
		if fam := f[webhookMetric]; fam != nil {
			for _, m := range fam.GetMetric() {
				count += float64(m.GetHistogram().GetSampleCount())
				for _, b := range m.GetHistogram().GetBucket() {
					out[b.GetUpperBound()] += float64(b.GetCumulativeCount())
				}
			}
		}
		return out, count
	}
	b0, n0 := read(before)
	b1, n1 := read(after)
	n = n1 - n0
	bounds := make([]float64, 0, len(b1))
	for ub := range b1 {
		bounds = append(bounds, ub)
	}
	sort.Float64s(bounds)
	q := func(p float64) time.Duration {
		for _, ub := range bounds {
			if !math.IsInf(ub, 1) && b1[ub]-b0[ub] >= p*n {
				return time.Duration(ub * float64(time.Second))
			}
		}
		return -1
	}
	return q(0.5), q(0.99), n
}

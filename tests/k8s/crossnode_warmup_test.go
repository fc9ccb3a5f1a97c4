//go:build k8se2e

package k8s

import (
	"fmt"
	"slices"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	basinv1 "github.com/basin-csi/basin/pkg/api/v1alpha1"
)

// TestWarmupAcrossNodes is scenario 4 between nodes. Nodes B and C hold
// part of a volume (their pods read it: C more than B), A none. A
// Warmup of count 2 chooses B and C, the two that hold the most (by
// name alone it would take A and B). A Warmup whose jobName is a Job of
// parallelism 3 warms all three nodes. Each run's status has one entry
// per node, and each node's VolumeCache, written by that node's plugin,
// agrees with its entry.
func TestWarmupAcrossNodes(t *testing.T) {
	scenario(t, "warmup-across-nodes")
	a, b, c := threeNodes(t)
	const pv, files, size = "e2e-xnode-warmup", 90, 128 << 10
	// Without directory prefetch, a node's cache holds what its pods
	// read, no more.
	ns, _ := trainDataset(t, pv, files, size, map[string]string{"prefetch": "false"})

	// C reads two thirds of the files, B one third.
	parts := map[string]int{c: 60, b: 30}
	for node, n := range parts {
		runPod(t, ns, pod{Name: "part-" + node, Claim: pv, ReadOnly: true, Node: node,
			Script: fmt.Sprintf("cat $(ls /data/train/* | head -n %d) > /dev/null", n)})
	}
	for node := range parts {
		mustSucceed(t, ns, "part-"+node, 2*time.Minute)
	}
	kubectl(t, "-n", ns, "delete", "pod", "--all", "--wait=true")
	waitFor(t, "the VolumeCaches of "+b+" and "+c+" to show what their pods read", 90*time.Second, func() bool {
		vcs := volumeCachesOf(t, pv)
		for node, n := range parts {
			if vc, ok := vcs[node]; !ok || vc.Status.CachedObjects != int64(n) {
				return false
			}
		}
		return true
	})
	before := volumeCachesOf(t, pv)
	if _, ok := before[a]; ok {
		t.Fatalf("%s holds a part of the volume before any warmup: %+v", a, before[a].Status)
	}
	t.Logf("before: %s holds %s, %s holds %s, %s nothing", c, before[c].Status.CachedSize, b, before[b].Status.CachedSize, a)

	// count: 2 takes the two nodes that hold the most.
	applyWarmup(t, &basinv1.Warmup{
		ObjectMeta: metav1.ObjectMeta{Name: "two", Namespace: ns},
		Spec:       basinv1.WarmupSpec{ClaimName: pv, Nodes: basinv1.WarmupNodes{Count: ptr.To[int32](2)}},
	})
	st := completeWarmup(t, ns, "two", 3*time.Minute)
	if got, want := warmupNodes(st), sorted(b, c); !slices.Equal(got, want) {
		t.Errorf("count 2 chose %v, want %v (the two holding the most)", got, want)
	}
	checkWarmupStatus(t, pv, st, files, files*size)

	// jobName: the nodes a Job of parallelism 3 may run on, three of them.
	apply(t, fmt.Sprintf(`apiVersion: batch/v1
kind: Job
metadata: {name: train, namespace: %s}
spec:
  suspend: true
  parallelism: 3
  completions: 3
  template:
    spec:
      restartPolicy: Never
      containers:
        - {name: main, image: basin.local/busybox:v1, imagePullPolicy: Never, command: ["true"]}
`, ns))
	applyWarmup(t, &basinv1.Warmup{
		ObjectMeta: metav1.ObjectMeta{Name: "for-job", Namespace: ns},
		Spec:       basinv1.WarmupSpec{ClaimName: pv, Nodes: basinv1.WarmupNodes{JobName: "train"}},
	})
	st = completeWarmup(t, ns, "for-job", 3*time.Minute)
	if got, want := warmupNodes(st), sorted(a, b, c); !slices.Equal(got, want) {
		t.Errorf("jobName of a Job of parallelism 3 chose %v, want %v", got, want)
	}
	checkWarmupStatus(t, pv, st, files, files*size)
}

// checkWarmupStatus checks that a completed run's status has one entry
// per node, each of the whole dataset, and that the VolumeCache of each
// of those nodes (once its node plugin reported after the run) agrees
// with its entry.
func checkWarmupStatus(t *testing.T, pv string, st basinv1.WarmupStatus, files, bytes int64) {
	t.Helper()
	seen := map[string]bool{}
	for _, n := range st.Nodes {
		if seen[n.NodeName] {
			t.Errorf("status has two entries for %s", n.NodeName)
		}
		seen[n.NodeName] = true
		if n.Phase != basinv1.WarmupComplete || n.Files != files || n.Bytes != bytes {
			t.Errorf("status of %s: %s, %d files, %d bytes; want Complete, %d, %d", n.NodeName, n.Phase, n.Files, n.Bytes, files, bytes)
		}
	}
	if st.NodesSummary != fmt.Sprintf("%d/%d", len(st.Nodes), len(st.Nodes)) || st.Files != files*int64(len(st.Nodes)) {
		t.Errorf("status: nodes %s, %d files; want all of %d nodes, %d files", st.NodesSummary, st.Files, len(st.Nodes), files*int64(len(st.Nodes)))
	}
	var vcs map[string]basinv1.VolumeCache
	agree := func(n basinv1.WarmupNodeStatus) bool {
		vc, ok := vcs[n.NodeName]
		return ok && vc.Status.CachedObjects == n.Files && vc.Status.CachedBytes >= n.Bytes
	}
	waitFor(t, "each warmed node's VolumeCache to agree with the Warmup's status", 90*time.Second, func() bool {
		vcs = volumeCachesOf(t, pv)
		return !slices.ContainsFunc(st.Nodes, func(n basinv1.WarmupNodeStatus) bool { return !agree(n) })
	})
	for _, n := range st.Nodes {
		vc := vcs[n.NodeName]
		t.Logf("%s: warmup %d files, %d bytes; VolumeCache %s: %d objects, %d bytes",
			n.NodeName, n.Files, n.Bytes, vc.Name, vc.Status.CachedObjects, vc.Status.CachedBytes)
	}
}

// sorted is names in order.
func sorted(names ...string) []string {
	slices.Sort(names)
	return names
}

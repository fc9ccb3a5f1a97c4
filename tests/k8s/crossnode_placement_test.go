//go:build k8se2e

package k8s

import (
	"fmt"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	basinv1 "github.com/basin-csi/basin/pkg/api/v1alpha1"
)

// warmLabel marks the node the placement scenario's Warmup selects.
const warmLabel = "e2e.basin.csi.dev/warm"

// TestPlacementAmongRealNodes is scenario 3 between nodes: a Warmup whose
// nodes.selector matches node B only warms B (B's node plugin reports
// the whole volume cached, no other node reports any); then pods of the
// volume, placed by the scheduler with the webhook's preference, land on
// B in 10 of 10 tries and read it right; with B cordoned, the next one
// lands on another node and reads it right from the bucket.
func TestPlacementAmongRealNodes(t *testing.T) {
	scenario(t, "placement-among-nodes")
	_, b, _ := threeNodes(t)
	const pv, files, size = "e2e-xnode-place", 60, 256 << 10
	ns, want := trainDataset(t, pv, files, size, nil)

	kubectl(t, "label", "node", b, warmLabel+"=true")
	t.Cleanup(func() { _, _ = kubectlErr("label", "node", b, warmLabel+"-") })
	applyWarmup(t, &basinv1.Warmup{
		ObjectMeta: metav1.ObjectMeta{Name: "to-b", Namespace: ns},
		Spec: basinv1.WarmupSpec{ClaimName: pv, Nodes: basinv1.WarmupNodes{
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{warmLabel: "true"}}}},
	})
	st := completeWarmup(t, ns, "to-b", 3*time.Minute)
	if got := warmupNodes(st); len(got) != 1 || got[0] != b {
		t.Fatalf("the Warmup chose %v, want [%s] (its selector)", got, b)
	}
	if st.Files != files || st.Bytes != files*size {
		t.Errorf("the Warmup loaded %d files, %d bytes; want %d, %d", st.Files, st.Bytes, files, files*size)
	}
	// B's node plugin reports it, once the warmup pod is gone: all of it.
	waitFor(t, "the VolumeCache of "+b+" to show the volume whole", 90*time.Second, func() bool {
		vc, ok := volumeCachesOf(t, pv)[b]
		return ok && vc.Status.CachedObjects == files && vc.Status.CachedBytes >= files*size
	})
	for node := range volumeCachesOf(t, pv) {
		if node != b {
			t.Errorf("a VolumeCache of %s on %s: the Warmup warmed another node than %s", pv, node, b)
		}
	}

	consumer := func(name string) pod {
		return pod{Name: name, Claim: pv, ReadOnly: true, Script: datasetReader("train")}
	}
	// The webhook reads VolumeCaches through its informer: allow it to
	// catch up.
	waitFor(t, "the webhook to prefer "+b, 30*time.Second, func() bool {
		return strings.HasPrefix(admittedNote(t, ns, consumer("probe")), "preferred "+b)
	})

	// Ten consumers, placed by the scheduler one after another.
	const tries = 10
	on := map[string]int{}
	for i := range tries {
		name := fmt.Sprintf("consumer-%d", i)
		runPod(t, ns, consumer(name))
		r := mustSucceed(t, ns, name, 2*time.Minute)
		node := podNode(ns, name)
		on[node]++
		why := jsonpath(ns, "pod/"+name, `{.metadata.annotations.basin\.csi\.dev/cache-affinity}`)
		if node != b {
			t.Errorf("try %d: placed on %s, want %s (annotation %q)", i, node, b, why)
		}
		if !strings.HasPrefix(why, "preferred "+b+" (weight 100") {
			t.Errorf("try %d: annotation %q, want a preference of weight 100 for %s", i, why, b)
		}
		if got := logValue(r.Log, "sum"); got != want {
			t.Errorf("try %d on %s read the dataset as %s, want %s", i, node, got, want)
		}
		kubectl(t, "-n", ns, "delete", "pod", name, "--wait=false")
	}
	t.Logf("%d consumers placed: %v", tries, on)

	// B cordoned: the preference stays, the scheduler goes elsewhere.
	kubectl(t, "cordon", b)
	t.Cleanup(func() { _, _ = kubectlErr("uncordon", b) })
	runPod(t, ns, consumer("cordoned"))
	r := mustSucceed(t, ns, "cordoned", 2*time.Minute)
	node := podNode(ns, "cordoned")
	if node == b || node == "" {
		t.Errorf("with %s cordoned the consumer was placed on %q", b, node)
	}
	if got := logValue(r.Log, "sum"); got != want {
		t.Errorf("the consumer on %s read the dataset as %s, want %s", node, got, want)
	}
	t.Logf("with %s cordoned: placed on %s, read right", b, node)
}

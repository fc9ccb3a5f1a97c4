//go:build k8se2e

package k8s

import (
	"strconv"
	"strings"
	"testing"
	"time"

	"k8s.io/utils/ptr"

	basinv1 "github.com/basin-csi/basin/pkg/api/v1alpha1"
)

// warmupObject is examples/warmup/warmup-object.yaml made to run here: in
// ns, on the claim, one node, without the GPU node selector and the
// schedule (runs are started by the test).
func warmupObject(t *testing.T, ns, claim string) string {
	t.Helper()
	return editExample(t, "warmup/warmup-object.yaml", func(w *basinv1.Warmup) {
		if w.Name != "imagenet-train" || len(w.Spec.Paths) != 1 || w.Spec.Paths[0] != "train" {
			t.Fatalf("examples/warmup/warmup-object.yaml: unexpected %s %v", w.Name, w.Spec.Paths)
		}
		w.Namespace, w.Spec.ClaimName = ns, claim
		w.Spec.Nodes = basinv1.WarmupNodes{Count: ptr.To[int32](1)}
		w.Spec.Schedule = ""
	})
}

// TestWarmupObject is the Warmup resource's scenario: a Warmup of one
// node drives a real preload through the controller's pod, reaches
// Complete with the dataset's files and bytes in its status, its pods are
// deleted, the next reader reads everything with zero bucket requests
// (the cache's own figures agree), and a new spec.rerun runs it again.
func TestWarmupObject(t *testing.T) {
	scenario(t, "warmup-object")
	ns := namespace(t, "e2e-warmupobj")
	s := openBucket(t, "e2e-warmupobj", true)
	const files, size = 80, 192 << 10
	sums := putObjects(t, s, "train/", files, size)
	const handle = "e2e-warmupobj-vol"
	// An immutable dataset, as in TestWarmupJob: listings and "no such
	// object" are trusted forever.
	staticVolume(t, ns, "e2e-warmupobj", handle, "e2e-warmupobj", "", "ReadOnlyMany", map[string]string{"metadataTTL": "-1", "negativeMetadataTTL": "-1"})

	start := time.Now()
	apply(t, warmupObject(t, ns, "e2e-warmupobj"))
	const w = "warmup/imagenet-train"
	kubectl(t, "-n", ns, "wait", "--for=condition=Complete", w, "--timeout=180s")
	t.Logf("run 1 complete %v after apply: %s", time.Since(start).Round(100*time.Millisecond), kubectl(t, "-n", ns, "get", "bwarm", "imagenet-train", "--no-headers"))
	status := func(path string) string { return jsonpath(ns, w, "{.status."+path+"}") }
	if got := status("files"); got != strconv.Itoa(files) {
		t.Errorf("status.files = %s, want %d", got, files)
	}
	if got := status("bytes"); got != strconv.Itoa(files*size) {
		t.Errorf("status.bytes = %s, want %d", got, files*size)
	}
	if got := status("nodesSummary"); got != "1/1" {
		t.Errorf("status.nodesSummary = %s, want 1/1", got)
	}
	if got := status("fits"); got != "Yes" {
		t.Errorf("status.fits = %s, want Yes (%s)", got, status("nodes[0].message"))
	}
	if got := status("nodes[0].errors"); got != "" && got != "0" {
		t.Errorf("status.nodes[0].errors = %s", got)
	}
	t.Logf("status: took %s..%s, %s B/s; node %s: %s", status("startTime"), status("completionTime"), status("bytesPerSecond"),
		status("nodes[0].nodeName"), status("nodes[0].message"))

	// The controller deletes its pods at the end of the run; with them
	// the volume is unstaged.
	sel := "app.kubernetes.io/name=basin-warmup"
	waitFor(t, "the warmup pods deleted", 60*time.Second, func() bool {
		out, err := kubectlErr("-n", ns, "get", "pods", "-l", sel, "-o", "name")
		return err == nil && strings.TrimSpace(out) == ""
	})
	waitFor(t, "the volume unstaged", 90*time.Second, func() bool { return len(volumeProcesses(t, handle)) == 0 })

	// The reader on the node the Warmup warmed.
	node := status("nodes[0].nodeName")
	m := readWarmed(t, ns, "e2e-warmupobj", handle, node, sums)
	vol := map[string]string{"volume": handle}
	// The cache's own figures: what the Warmup's status says it loaded is
	// in the node's cache.
	objects, used := sample(m, "basin_cache_objects", vol), sample(m, "basin_cache_used_bytes", vol)
	t.Logf("%s's cache: %v objects, %v bytes used", node, objects, used)
	if objects < files || used < float64(files*size) {
		t.Errorf("the node's cache holds %v objects, %v bytes; the Warmup's status says %d files, %d bytes", objects, used, files, files*size)
	}

	// Again on demand: a new spec.rerun starts run 2.
	kubectl(t, "-n", ns, "patch", w, "--type=merge", "-p", `{"spec":{"rerun":"2"}}`)
	waitFor(t, "run 2 started", 30*time.Second, func() bool { return status("runs") == "2" })
	kubectl(t, "-n", ns, "wait", "--for=condition=Complete", w, "--timeout=180s")
	if got := status("observedRerun"); got != "2" {
		t.Errorf("status.observedRerun = %q, want 2", got)
	}
	if got := status("files"); got != strconv.Itoa(files) {
		t.Errorf("run 2: status.files = %s, want %d", got, files)
	}
	waitFor(t, "run 2's pods deleted", 60*time.Second, func() bool {
		out, err := kubectlErr("-n", ns, "get", "pods", "-l", sel, "-o", "name")
		return err == nil && strings.TrimSpace(out) == ""
	})
	events := kubectl(t, "-n", ns, "get", "events", "--field-selector", "involvedObject.kind=Warmup", "-o", "custom-columns=REASON:.reason,MSG:.message", "--no-headers")
	t.Logf("events:\n%s", events)
	if strings.Count(events, "Completed") < 2 {
		t.Errorf("want two Completed events")
	}
	ctl := scrape(t, controllerMetrics(t))
	if n := sample(ctl, "basin_warmup_runs_ended_total", map[string]string{"outcome": "complete"}); n < 2 {
		t.Errorf("basin_warmup_runs_ended_total{outcome=complete} = %v, want at least 2", n)
	}
	if n := sample(ctl, "controller_runtime_reconcile_total", map[string]string{"controller": "warmup", "result": "success"}); n < 1 {
		t.Errorf("controller_runtime_reconcile_total{controller=warmup,result=success} = %v", n)
	}
}

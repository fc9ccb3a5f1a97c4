//go:build k8se2e

package k8s

import (
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"sigs.k8s.io/yaml"

	"github.com/basin-csi/basin/internal/testserver"
	basinv1 "github.com/basin-csi/basin/pkg/api/v1alpha1"
)

// The helpers of the scenarios between nodes: pods pinned to one of the
// cluster's nodes, the FUSE process of a volume on one node, Warmups and
// their status, and the clock that pods and the test share.

// hostnameLabel is the label kubelet gives its Node: the node's name.
const hostnameLabel = "kubernetes.io/hostname"

// threeNodes returns the cluster's first three nodes. On a smaller
// cluster it skips the test (NODES=1: the scenarios of one node only; the
// summary counts it skipped), and fails it under CI=true, which runs three.
func threeNodes(t *testing.T) (a, b, c string) {
	t.Helper()
	if len(env.Nodes) < 3 {
		testserver.Unavailable(t, "this scenario needs three nodes, the cluster has %v (make k8s-up NODES=3)", env.Nodes)
	}
	return env.Nodes[0], env.Nodes[1], env.Nodes[2]
}

// podNode is the node pod was scheduled on ("" while it is not).
func podNode(ns, pod string) string { return jsonpath(ns, "pod/"+pod, "{.spec.nodeName}") }

// execIn runs script with sh in pod's container and returns its output.
func execIn(t *testing.T, ns, pod, script string) string {
	t.Helper()
	return kubectl(t, "-n", ns, "exec", pod, "--", "sh", "-c", "set -e\n"+script)
}

// fuseProcessOn is the pid of the process serving the volume with handle
// on node (its standby aside); 0 while there is none.
func fuseProcessOn(t *testing.T, handle, node string) int {
	t.Helper()
	on := fuseProcessesOn(t, node, handle)
	if len(on) > 1 {
		t.Fatalf("%d processes serve volume %s on %s: %v", len(on), handle, node, on)
	}
	if len(on) == 0 {
		return 0
	}
	return on[0]
}

// uptime is the machine's clock in centiseconds since boot, as pods read
// it from /proc/uptime: pods and the test share it (there is no time
// namespace), so it orders what both did.
func uptime(t *testing.T) int64 {
	t.Helper()
	b, err := os.ReadFile("/proc/uptime")
	if err != nil {
		t.Fatal(err)
	}
	cs, ok := centiseconds(strings.Fields(string(b))[0])
	if !ok {
		t.Fatalf("/proc/uptime: %q", b)
	}
	return cs
}

// centiseconds parses a /proc/uptime reading ("1234.56").
func centiseconds(s string) (int64, bool) {
	whole, frac, ok := strings.Cut(s, ".")
	if !ok || len(frac) != 2 {
		return 0, false
	}
	n, err := strconv.ParseInt(whole+frac, 10, 64)
	return n, err == nil
}

// clockShell defines now, in a pod's shell: it sets NOW to the uptime in
// centiseconds with the shell's own builtins (no process, not even a
// subshell).
const clockShell = `now() { read _up _ < /proc/uptime; NOW=${_up%.*}${_up#*.}; }
`

// applyWarmup creates or updates w.
func applyWarmup(t *testing.T, w *basinv1.Warmup) {
	t.Helper()
	w.APIVersion, w.Kind = basinv1.GroupVersion.String(), "Warmup"
	b, err := yaml.Marshal(w)
	if err != nil {
		t.Fatal(err)
	}
	apply(t, string(b))
}

// completeWarmup waits until the Warmup's current run is Complete and
// returns its status.
func completeWarmup(t *testing.T, ns, name string, timeout time.Duration) basinv1.WarmupStatus {
	t.Helper()
	var w basinv1.Warmup
	waitFor(t, "warmup "+ns+"/"+name+" complete", timeout, func() bool {
		out, err := kubectlErr("-n", ns, "get", "warmup", name, "-o", "json")
		if err != nil {
			return false
		}
		if err := json.Unmarshal([]byte(out), &w); err != nil {
			t.Fatalf("decode warmup: %v", err)
		}
		if w.Status.Phase == basinv1.WarmupFailed {
			t.Fatalf("warmup %s/%s failed: %+v", ns, name, w.Status.Nodes)
		}
		return w.Status.Phase == basinv1.WarmupComplete && w.Status.ObservedGeneration == w.Generation
	})
	return w.Status
}

// warmupNodes are the names of a Warmup status's node entries, sorted.
func warmupNodes(s basinv1.WarmupStatus) []string {
	out := make([]string, len(s.Nodes))
	for i, n := range s.Nodes {
		out[i] = n.NodeName
	}
	slices.Sort(out)
	return out
}

// volumeCachesOf are the VolumeCaches of pv, by node.
func volumeCachesOf(t *testing.T, pv string) map[string]basinv1.VolumeCache {
	t.Helper()
	return volumeCachesBy(t, basinv1.LabelVolume+"="+pv, func(vc basinv1.VolumeCache) string { return vc.Spec.NodeName })
}

// volumeCachesBy lists the VolumeCaches matching a label selector, keyed
// by key.
func volumeCachesBy(t *testing.T, selector string, key func(basinv1.VolumeCache) string) map[string]basinv1.VolumeCache {
	t.Helper()
	out, err := kubectlErr("get", "volumecaches", "-o", "json", "-l", selector)
	if err != nil {
		t.Fatalf("get volumecaches -l %s: %v", selector, err)
	}
	var list basinv1.VolumeCacheList
	if err := json.Unmarshal([]byte(out), &list); err != nil {
		t.Fatalf("decode volumecaches: %v", err)
	}
	m := map[string]basinv1.VolumeCache{}
	for _, vc := range list.Items {
		m[key(vc)] = vc
	}
	return m
}

// datasetReader is a pod script that prints the digest of every file
// under /data/DIR as `sha256sum /data/DIR/* | sha256sum` does (see
// sumsListing), then ends.
func datasetReader(dir string) string {
	return fmt.Sprintf("echo sum=$(sha256sum /data/%s/* | sha256sum | cut -d' ' -f1)\n", dir)
}

// admittedNote is the placement webhook's annotation on p as the API
// server would admit it now (a server-side dry run: nothing is created).
func admittedNote(t *testing.T, ns string, p pod) string {
	t.Helper()
	return kubectlIn(t, p.yaml(ns), "create", "--dry-run=server", "-f", "-",
		"-o", `jsonpath={.metadata.annotations.basin\.csi\.dev/cache-affinity}`)
}

// trainDataset makes, for a scenario named name, a namespace, a bucket of
// files objects train/NNNNN of size bytes and an immutable static
// ReadOnlyMany volume of it (PV and claim named name: listings and "no
// such object" trusted forever; attrs are more volume attributes), and
// returns the namespace and the digest a datasetReader("train") prints.
func trainDataset(t *testing.T, name string, files, size int, attrs map[string]string) (ns, want string) {
	t.Helper()
	ns = namespace(t, name)
	sums := putObjects(t, openBucket(t, name, true), "train/", files, size)
	all := map[string]string{"metadataTTL": "-1", "negativeMetadataTTL": "-1"}
	maps.Copy(all, attrs)
	staticVolume(t, ns, name, name+"-vol", name, "", "ReadOnlyMany", all)
	return ns, digest(sumsListing("/data/train", "train/", sums))
}

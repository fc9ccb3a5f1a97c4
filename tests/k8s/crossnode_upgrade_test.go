//go:build k8se2e

package k8s

import (
	"fmt"
	"strings"
	"testing"
	"time"
)

// fleetReader is slowReader that goes on until /tmp/stop appears: it
// pauses between the big file's MiBs only until then (then reads to the
// end at once), and reads every small file again and again until then,
// failing if their sums change.
var fleetReader = strings.NewReplacer(
	`usleep $PAUSE; i=$((i+1))`, `[ -e /tmp/stop ] || usleep $PAUSE; i=$((i+1))`,
	`( for f in /data/small/*; do sha256sum "$f"; usleep $PAUSE; done ) | sha256sum | cut -d' ' -f1 > /tmp/small &`,
	`( first=; while [ ! -e /tmp/stop ]; do s=$( (for f in /data/small/*; do sha256sum "$f"; done) | sha256sum | cut -d' ' -f1); echo $s > /tmp/small; [ -n "$first" ] || first=$s; [ "$s" = "$first" ] || { echo "small files changed: $s"; exit 1; }; usleep 200000; done ) &`,
).Replace(slowReader)

// TestRollingUpgradeAcrossNodes is scenario 6 between nodes: while a pod
// on each of the three nodes streams a large file through an open
// descriptor and reads small files in a loop, the node plugin DaemonSet
// is restarted (`kubectl rollout restart`, one node at a time:
// maxUnavailable 1) and then upgraded to another image tag. Every reader
// exits 0 with every checksum right; no pod's mount and no node's FUSE
// mount is replaced.
func TestRollingUpgradeAcrossNodes(t *testing.T) {
	scenario(t, "rolling-upgrade-across-nodes")
	a, b, c := threeNodes(t)
	nodes := []string{a, b, c}
	ns := namespace(t, "e2e-xnode-upgrade")
	const chunks = 128
	big, small := slowDataset(t, "e2e-xnode-upgrade", "", chunks)
	const handle = "e2e-xnode-upgrade-vol"
	staticVolume(t, ns, "e2e-xnode-upgrade", handle, "e2e-xnode-upgrade", "", "ReadOnlyMany", nil)
	if got := jsonpath("basin-system", "daemonset/basin-node", "{.spec.updateStrategy.rollingUpdate.maxUnavailable}"); got != "1" {
		t.Errorf("the node plugin's maxUnavailable is %q, want 1", got)
	}

	script := fmt.Sprintf("CHUNKS=%d PAUSE=2500000\n", chunks) + fleetReader
	for _, n := range nodes {
		runPod(t, ns, pod{Name: "reader-" + n, Claim: "e2e-xnode-upgrade", Script: script, ReadOnly: true, Node: n})
	}
	mounts := map[string]string{}
	for _, n := range nodes {
		waitLog(t, ns, "reader-"+n, "STARTED", 2*time.Minute)
		mounts[n] = fuseMounts(t, n, "e2e-xnode-upgrade", handle)
		if mounts[n] == "" {
			t.Fatalf("no FUSE mount of Basin on %s", n)
		}
	}

	ds := []string{"-n", "basin-system"}
	start := time.Now()
	kubectl(t, append(ds, "rollout", "restart", "daemonset/basin-node")...)
	waitNodePluginRollout(t, 6*time.Minute)
	t.Logf("node plugin restarted on %d nodes in %v", len(nodes), time.Since(start).Round(time.Second))

	next := strings.TrimSuffix(env.Image, ":"+tagOf(env.Image)) + ":" + tagOf(env.Image) + "-fleet"
	ctrAll(t, "images", "tag", "--force", env.Image, next)
	t.Cleanup(func() {
		_, _ = kubectlErr(append(ds, "set", "image", "daemonset/basin-node", "csi-driver="+env.Image)...)
		_, _ = kubectlErr(append(ds, "rollout", "status", "daemonset/basin-node", "--timeout=170s")...)
	})
	start = time.Now()
	kubectl(t, append(ds, "set", "image", "daemonset/basin-node", "csi-driver="+next)...)
	waitNodePluginRollout(t, 6*time.Minute)
	t.Logf("node plugin upgraded to %s on %d nodes in %v", next, len(nodes), time.Since(start).Round(time.Second))
	for _, n := range nodes {
		img := strings.TrimSpace(kubectl(t, append(ds, "get", "pods", "-l", "app.kubernetes.io/name=basin-node",
			"--field-selector", "spec.nodeName="+n, "-o", "jsonpath={.items[*].spec.containers[0].image}")...))
		if img != next {
			t.Errorf("the node plugin on %s runs %q, want %s", n, img, next)
		}
	}

	// While the readers still hold the volume (a pod that ends unstages
	// it): the same mounts on every node.
	for _, n := range nodes {
		if got := fuseMounts(t, n, "e2e-xnode-upgrade", handle); got != mounts[n] {
			t.Errorf("the FUSE mounts on %s changed:\nbefore: %s\nafter:  %s", n, mounts[n], got)
		}
	}
	for _, n := range nodes {
		kubectl(t, "-n", ns, "exec", "reader-"+n, "--", "touch", "/tmp/stop")
	}
	for _, n := range nodes {
		r := mustSucceed(t, ns, "reader-"+n, 3*time.Minute)
		t.Logf("reader on %s: %s", n, strings.Join(strings.Fields(r.Log), " "))
		checkSlowReader(t, r, big, small)
	}
}

// fuseMounts is the FUSE mounts of the volume pv (whose handle is handle)
// in node's mount namespace, one "ID mount point" per line: kubelet's
// staging path holds the SHA-256 of the handle, each pod's path the
// volume's name. A mount replaced shows under a new ID.
func fuseMounts(t *testing.T, node, pv, handle string) string {
	t.Helper()
	staged := digest(handle)
	var out []string
	for _, line := range strings.Split(nodeExec(t, node, "cat", "/proc/self/mountinfo"), "\n") {
		f := strings.Fields(line)
		sep := -1
		for i, x := range f {
			if x == "-" {
				sep = i
				break
			}
		}
		if sep < 0 || sep+1 >= len(f) || !strings.HasPrefix(f[sep+1], "fuse") || len(f) < 5 {
			continue
		}
		if !strings.Contains(f[4], "/"+staged+"/") && !strings.Contains(f[4], "/"+pv+"/") {
			continue
		}
		out = append(out, f[0]+" "+f[4])
	}
	return strings.Join(out, "\n")
}

// waitNodePluginRollout waits until the node plugin DaemonSet's rollout
// is done: every node runs an available pod of its current template.
func waitNodePluginRollout(t *testing.T, timeout time.Duration) {
	t.Helper()
	const ds = "daemonset/basin-node"
	waitFor(t, "the node plugin's rollout", timeout, func() bool {
		st := strings.Fields(jsonpath("basin-system", ds,
			"{.metadata.generation} {.status.observedGeneration} {.status.desiredNumberScheduled} {.status.updatedNumberScheduled} {.status.numberAvailable}"))
		return len(st) == 5 && st[0] == st[1] && st[2] == st[3] && st[2] == st[4]
	})
}

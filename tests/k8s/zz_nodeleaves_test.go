//go:build k8se2e

package k8s

// This file's name sorts last: go test runs a package's tests in the
// order of its files, and this scenario takes a node out of the cluster
// for good.

import (
	"fmt"
	"strings"
	"testing"
	"time"

	basinv1 "github.com/basin-csi/basin/pkg/api/v1alpha1"
)

// TestNodeLeaves is scenario 5 between nodes, the last of the suite: a
// Deployment's pod runs on node C (preferred there) and reads a volume,
// so C's node plugin reports a VolumeCache of it. C's kubelet stops and
// its Node object is deleted: every VolumeCache of C is deleted, and the
// pod, replaced on another node, reads the volume right.
func TestNodeLeaves(t *testing.T) {
	scenario(t, "node-leaves")
	_, _, c := threeNodes(t)
	const pv = "e2e-xnode-leaves"
	ns, want := trainDataset(t, pv, 40, 128<<10, nil)

	apply(t, fmt.Sprintf(`apiVersion: apps/v1
kind: Deployment
metadata: {name: trainer, namespace: %[1]s}
spec:
  replicas: 1
  selector: {matchLabels: {app: trainer}}
  template:
    metadata:
      labels: {app: trainer}
    spec:
      terminationGracePeriodSeconds: 1
      affinity:
        nodeAffinity:
          preferredDuringSchedulingIgnoredDuringExecution:
            - weight: 100
              preference: {matchExpressions: [{key: %[2]s, operator: In, values: [%[3]s]}]}
      containers:
        - name: main
          image: basin.local/busybox:v1
          imagePullPolicy: Never
          command: ["sh", "-c", %[4]q]
          volumeMounts:
            - {name: data, mountPath: /data, readOnly: true, mountPropagation: HostToContainer}
      volumes:
        - name: data
          persistentVolumeClaim: {claimName: %[5]s, readOnly: true}
`, ns, hostnameLabel, c, datasetReader("train")+"echo READY\nsleep 3600", pv))
	first := trainerPod(t, ns, "")
	if node := podNode(ns, first); node != c {
		t.Fatalf("the trainer runs on %s, want %s (preferred)", node, c)
	}
	waitLog(t, ns, first, "READY", 2*time.Minute)
	if got := logValue(kubectl(t, "-n", ns, "logs", first), "sum"); got != want {
		t.Fatalf("the trainer on %s read %s, want %s", c, got, want)
	}
	onC := basinv1.LabelNode + "=" + c
	waitFor(t, "a VolumeCache of "+pv+" on "+c, 90*time.Second, func() bool {
		_, ok := volumeCachesOf(t, pv)[c]
		return ok
	})
	t.Logf("VolumeCaches of %s before it leaves: %v", c, names(volumeCachesBy(t, onC, func(vc basinv1.VolumeCache) string { return vc.Name })))

	stopNode(t, c)
	left := time.Now()
	kubectl(t, "delete", "node", c, "--wait=true")
	waitFor(t, "every VolumeCache of "+c+" deleted", 2*time.Minute, func() bool {
		return len(volumeCachesBy(t, onC, func(vc basinv1.VolumeCache) string { return vc.Name })) == 0
	})
	t.Logf("%s's VolumeCaches deleted %v after it left", c, time.Since(left).Round(time.Second))

	// The pod of the gone node is collected, and its replacement runs
	// elsewhere.
	next := trainerPod(t, ns, first)
	waitLog(t, ns, next, "READY", 2*time.Minute)
	node := podNode(ns, next)
	if node == c || node == "" {
		t.Fatalf("the replacement trainer runs on %q", node)
	}
	if got := logValue(kubectl(t, "-n", ns, "logs", next), "sum"); got != want {
		t.Errorf("the replacement trainer on %s read %s, want %s", node, got, want)
	}
	t.Logf("the trainer replaced on %s %v after %s left, read right", node, time.Since(left).Round(time.Second), c)
	// C's node plugin may still run, without its kubelet: nothing of C
	// comes back.
	if vcs := volumeCachesBy(t, onC, func(vc basinv1.VolumeCache) string { return vc.Name }); len(vcs) != 0 {
		t.Errorf("VolumeCaches of %s are back after it left: %v", c, names(vcs))
	}
}

// trainerPod waits for a scheduled pod of the trainer Deployment other
// than not and returns its name.
func trainerPod(t *testing.T, ns, not string) string {
	t.Helper()
	var name string
	waitFor(t, "a trainer pod scheduled", 4*time.Minute, func() bool {
		out, err := kubectlErr("-n", ns, "get", "pods", "-l", "app=trainer", "-o",
			`jsonpath={range .items[*]}{.metadata.name} {.spec.nodeName} {.metadata.deletionTimestamp}{"\n"}{end}`)
		if err != nil {
			return false
		}
		for _, l := range strings.Split(strings.TrimSpace(out), "\n") {
			f := strings.Fields(l)
			if len(f) == 2 && f[0] != not {
				name = f[0]
				return true
			}
		}
		return false
	})
	return name
}

// names are a map's keys.
func names(m map[string]basinv1.VolumeCache) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	return out
}

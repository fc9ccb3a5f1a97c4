//go:build k8se2e

package k8s

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"
)

// fakeNodeLabel marks the Node objects of fakeNodes; the placement
// scenarios' pods require it, so they never land on the real node.
const fakeNodeLabel = "e2e.basin.csi.dev/fake-node"

// fakeNode is a Node object without a kubelet: the scheduler sees its
// allocatable resources and binds pods to it; nothing runs them. It has
// no kubernetes.io/os label, so Basin's DaemonSets (nodeSelector
// kubernetes.io/os: linux) leave it alone, and a NoSchedule taint
// (fakeNodeLabel), so no other pod (the controller's, scaled back up)
// lands there: the placement pods tolerate it.
type fakeNode struct {
	Name, CPU, Memory string
}

// fakeNodes registers nodes and keeps them Ready until the test ends: the
// node lifecycle controller takes a node whose Lease in kube-node-lease
// is not renewed for its grace period (40-50s) for unreachable and taints
// it, so a goroutine renews the Leases as a kubelet would (every 5s).
// Pods bound to them cannot end on their own: callers force-delete them
// (forceDeletePods).
func fakeNodes(t *testing.T, nodes ...fakeNode) {
	t.Helper()
	now := time.Now().UTC().Format(time.RFC3339)
	for _, n := range nodes {
		apply(t, fmt.Sprintf(`apiVersion: v1
kind: Node
metadata:
  name: %s
  labels: {%[2]s: "true", kubernetes.io/hostname: %[1]s}
spec:
  taints: [{key: %[2]s, value: "true", effect: NoSchedule}]
`, n.Name, fakeNodeLabel))
		t.Cleanup(func() { _, _ = kubectlErr("delete", "node", n.Name, "--ignore-not-found", "--wait=false") })
		res := fmt.Sprintf(`{"cpu": %q, "memory": %q, "pods": "110"}`, n.CPU, n.Memory)
		kubectl(t, "patch", "node", n.Name, "--subresource=status", "--type=merge", "-p", fmt.Sprintf(
			`{"status": {"capacity": %s, "allocatable": %s, "conditions": [{"type": "Ready", "status": "True", "reason": "KubeletReady", "message": "fake node of the placement test", "lastHeartbeatTime": %q, "lastTransitionTime": %q}]}}`,
			res, res, now, now))
	}
	renew := func() error {
		var b strings.Builder
		ts := time.Now().UTC().Format("2006-01-02T15:04:05.000000Z07:00")
		for _, n := range nodes {
			fmt.Fprintf(&b, `apiVersion: coordination.k8s.io/v1
kind: Lease
metadata: {name: %s, namespace: kube-node-lease}
spec: {holderIdentity: %s, leaseDurationSeconds: 40, renewTime: %q}
---
`, n.Name, n.Name, ts)
		}
		_, err := run(b.String(), "apply", "-f", "-")
		return err
	}
	if err := renew(); err != nil {
		t.Fatalf("node leases: %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		tick := time.NewTicker(5 * time.Second)
		defer tick.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
				_ = renew()
			}
		}
	}()
	t.Cleanup(func() {
		cancel()
		wg.Wait()
		for _, n := range nodes {
			_, _ = kubectlErr("-n", "kube-node-lease", "delete", "lease", n.Name, "--ignore-not-found")
		}
	})
	for _, n := range nodes {
		waitFor(t, "node "+n.Name+" Ready, with only its own taint", 60*time.Second, func() bool {
			return jsonpath("", "node/"+n.Name, `{.status.conditions[?(@.type=="Ready")].status}`) == "True" &&
				jsonpath("", "node/"+n.Name, "{.spec.taints[*].key}") == fakeNodeLabel
		})
	}
}

// forceDeletePods removes pods at once: those on fake nodes have no
// kubelet to confirm their end.
func forceDeletePods(t *testing.T, ns string, names ...string) {
	t.Helper()
	args := append([]string{"-n", ns, "delete", "pod", "--grace-period=0", "--force", "--ignore-not-found"}, names...)
	if len(names) == 0 {
		args = append(args, "--all")
	}
	kubectl(t, args...)
}

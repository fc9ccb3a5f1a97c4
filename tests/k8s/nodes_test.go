//go:build k8se2e

package k8s

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
)

// A node of the cluster is a kubelet, containerd and kube-proxy in a
// network and a mount namespace of their own, held by an anchor process
// (hack/k8s/lib/nodes.sh); its pods live under the cgroup /NODE.

// nodeExec runs a command in node's network and mount namespaces (where
// its kubelet, containerd, node plugin and FUSE mounts are) and returns
// its standard output; a failure fails the test.
func nodeExec(t *testing.T, node string, args ...string) string {
	t.Helper()
	out, err := nodeExecErr(node, args...)
	if err != nil {
		t.Fatalf("on %s: %s: %v", node, strings.Join(args, " "), err)
	}
	return out
}

// nodeExecErr is nodeExec returning the error.
func nodeExecErr(node string, args ...string) (string, error) {
	b, err := os.ReadFile(filepath.Join(env.Dir, "pids", node+"-anchor"))
	if err != nil {
		return "", fmt.Errorf("node %s: %w", node, err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "nsenter", append([]string{"-t", strings.TrimSpace(string(b)), "-n", "-m", "--"}, args...)...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		return out.String(), fmt.Errorf("%w: %s", err, strings.TrimSpace(errb.String()))
	}
	return out.String(), nil
}

// clusterScript runs hack/k8s/cluster.sh with args on this run's cluster.
func clusterScript(t *testing.T, args ...string) {
	t.Helper()
	cmd := exec.Command("../../hack/k8s/cluster.sh", args...)
	cmd.Env = append(os.Environ(), "BASIN_K8S_DIR="+env.Dir)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("cluster.sh %s: %v: %s", strings.Join(args, " "), err, out)
	}
}

// stopNode stops node's kubelet and kube-proxy, as when the node leaves:
// its containers, mounts and FUSE processes stay until the cluster's
// teardown (`cluster.sh start-node` brings it back by hand). Its Node object stays too: delete it to
// complete the leave.
func stopNode(t *testing.T, node string) {
	t.Helper()
	clusterScript(t, "stop-node", node)
}

// ctrAll runs containerd's client on the images of every node.
func ctrAll(t *testing.T, args ...string) {
	t.Helper()
	for _, n := range env.Nodes {
		sock := filepath.Join(env.State, n, "containerd.sock")
		out, err := exec.Command("ctr", append([]string{"--address", sock, "-n", "k8s.io"}, args...)...).CombinedOutput()
		if err != nil {
			t.Fatalf("ctr on %s: %s: %v: %s", n, strings.Join(args, " "), err, out)
		}
	}
}

// nodeOf is the node whose pods include process pid ("" if none): its
// cgroup path starts with /NODE/.
func nodeOf(pid int) string {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/cgroup", pid))
	if err != nil {
		return ""
	}
	for _, l := range strings.Split(string(b), "\n") {
		// hierarchy-ID:controllers:path
		parts := strings.SplitN(l, ":", 3)
		if len(parts) != 3 {
			continue
		}
		for _, n := range env.Nodes {
			if strings.HasPrefix(parts[2], "/"+n+"/") {
				return n
			}
		}
	}
	return ""
}

// fuseProcessesOn is fuseProcesses of node only.
func fuseProcessesOn(t *testing.T, node, handle string) []int {
	t.Helper()
	var on []int
	for _, pid := range fuseProcesses(t, handle) {
		if nodeOf(pid) == node {
			on = append(on, pid)
		}
	}
	return on
}

// runningPod is the running, not terminating pod of basin-system with
// label app.kubernetes.io/name=name, on node if node is not empty.
func runningPod(t *testing.T, name, node string) corev1.Pod {
	t.Helper()
	var found corev1.Pod
	waitFor(t, "a running "+name+" pod "+node, 2*time.Minute, func() bool {
		args := []string{"-n", "basin-system", "get", "pods", "-o", "json", "-l", "app.kubernetes.io/name=" + name}
		if node != "" {
			args = append(args, "--field-selector", "spec.nodeName="+node)
		}
		out, err := kubectlErr(args...)
		if err != nil {
			return false
		}
		var list corev1.PodList
		if err := json.Unmarshal([]byte(out), &list); err != nil {
			t.Fatalf("decode pods: %v", err)
		}
		for _, p := range list.Items {
			if p.DeletionTimestamp == nil && p.Status.Phase == corev1.PodRunning && p.Status.PodIP != "" {
				found = p
				return true
			}
		}
		return false
	})
	return found
}

// nodeSelector is a pod spec's nodeSelector line pinning it to node ("" for
// none), indented as a pod spec's field.
func nodeSelector(node string) string {
	if node == "" {
		return ""
	}
	return fmt.Sprintf("  nodeSelector: {kubernetes.io/hostname: %s}\n", node)
}

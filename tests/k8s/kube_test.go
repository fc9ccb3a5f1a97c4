//go:build k8se2e

package k8s

import (
	"bytes"
	"context"
	"fmt"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"
)

// kubectl runs the cluster's kubectl and returns its standard output; a
// failure fails the test.
func kubectl(t *testing.T, args ...string) string {
	t.Helper()
	out, err := kubectlErr(args...)
	if err != nil {
		t.Fatalf("kubectl %s: %v", strings.Join(args, " "), err)
	}
	return out
}

// kubectlIn is kubectl with its standard input.
func kubectlIn(t *testing.T, stdin string, args ...string) string {
	t.Helper()
	out, err := run(stdin, args...)
	if err != nil {
		t.Fatalf("kubectl %s: %v", strings.Join(args, " "), err)
	}
	return out
}

func kubectlErr(args ...string) (string, error) { return run("", args...) }

func run(stdin string, args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, env.Bin+"/kubectl", append([]string{"--kubeconfig", env.Kubeconfig}, args...)...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if stdin != "" {
		cmd.Stdin = strings.NewReader(stdin)
	}
	if err := cmd.Run(); err != nil {
		return out.String(), fmt.Errorf("%w: %s", err, strings.TrimSpace(errb.String()))
	}
	return out.String(), nil
}

// apply applies YAML documents.
func apply(t *testing.T, yaml string) {
	t.Helper()
	kubectlIn(t, yaml, "apply", "-f", "-")
}

// namespace creates a namespace for one scenario, deleted (with its pods
// and claims) when the test ends.
func namespace(t *testing.T, name string) string {
	t.Helper()
	kubectl(t, "create", "namespace", name)
	t.Cleanup(func() {
		if t.Failed() {
			dumpNamespace(t, name)
		}
		_, _ = kubectlErr("delete", "namespace", name, "--wait=true", "--timeout=120s")
	})
	return name
}

// dumpNamespace logs what a failed scenario's namespace holds.
func dumpNamespace(t *testing.T, ns string) {
	out, _ := kubectlErr("-n", ns, "get", "pods,pvc,events", "-o", "wide")
	t.Logf("namespace %s:\n%s", ns, out)
	logs, err := kubectlErr("-n", "basin-system", "logs", "-l", "app.kubernetes.io/name=basin-node", "--prefix", "--tail=40")
	t.Logf("node plugins' logs (tail):\n%s%v", logs, err)
}

// waitFor polls cond every half second until it is true or timeout.
func waitFor(t *testing.T, what string, timeout time.Duration, cond func() bool) {
	t.Helper()
	end := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(end) {
			t.Fatalf("%s: not after %v", what, timeout)
		}
		time.Sleep(500 * time.Millisecond)
	}
}

// jsonpath reads one field of an object ("" when absent).
func jsonpath(ns, obj, path string) string {
	args := []string{"get", obj, "-o", "jsonpath=" + path}
	if ns != "" {
		args = append([]string{"-n", ns}, args...)
	}
	out, err := kubectlErr(args...)
	if err != nil {
		return ""
	}
	return strings.TrimSpace(out)
}

// podResult is how a pod ended.
type podResult struct {
	Phase    string
	ExitCode int
	Restarts int
	Log      string
}

// waitPod waits until pod ends and returns how.
func waitPod(t *testing.T, ns, pod string, timeout time.Duration) podResult {
	t.Helper()
	var phase string
	waitFor(t, "pod "+ns+"/"+pod+" to end", timeout, func() bool {
		phase = jsonpath(ns, "pod/"+pod, "{.status.phase}")
		return phase == "Succeeded" || phase == "Failed"
	})
	r := podResult{Phase: phase}
	r.ExitCode, _ = strconv.Atoi(jsonpath(ns, "pod/"+pod, "{.status.containerStatuses[0].state.terminated.exitCode}"))
	r.Restarts, _ = strconv.Atoi(jsonpath(ns, "pod/"+pod, "{.status.containerStatuses[0].restartCount}"))
	r.Log, _ = kubectlErr("-n", ns, "logs", pod)
	return r
}

// mustSucceed waits for pod and fails the test unless it exited 0.
func mustSucceed(t *testing.T, ns, pod string, timeout time.Duration) podResult {
	t.Helper()
	r := waitPod(t, ns, pod, timeout)
	if r.Phase != "Succeeded" || r.ExitCode != 0 {
		t.Fatalf("pod %s/%s: phase %s, exit code %d; log:\n%s", ns, pod, r.Phase, r.ExitCode, r.Log)
	}
	return r
}

// waitLog waits until pod's log holds line.
func waitLog(t *testing.T, ns, pod, line string, timeout time.Duration) {
	t.Helper()
	waitFor(t, "pod "+ns+"/"+pod+" to log "+line, timeout, func() bool {
		out, _ := kubectlErr("-n", ns, "logs", pod)
		if strings.Contains(out, line) {
			return true
		}
		if ph := jsonpath(ns, "pod/"+pod, "{.status.phase}"); ph == "Succeeded" || ph == "Failed" {
			t.Fatalf("pod %s/%s ended (%s) without logging %q; log:\n%s", ns, pod, ph, line, out)
		}
		return false
	})
}

// logValue returns the value of the last "key=value" line of a log.
func logValue(log, key string) string {
	v := ""
	for _, l := range strings.Split(log, "\n") {
		if after, ok := strings.CutPrefix(strings.TrimSpace(l), key+"="); ok {
			v = after
		}
	}
	return v
}

// pod is a pod of the test image running script with a claim at /data.
type pod struct {
	Name, Claim, Script string
	ReadOnly            bool
	// SecurityContext is the pod's securityContext as YAML lines
	// (indented 4 spaces); empty runs as root.
	SecurityContext string
	// Node pins the pod to a node (nodeSelector kubernetes.io/hostname);
	// empty leaves it to the scheduler.
	Node string
}

func (p pod) yaml(ns string) string {
	sc := p.SecurityContext
	if sc == "" {
		sc = "    {}"
	}
	return fmt.Sprintf(`apiVersion: v1
kind: Pod
metadata:
  name: %s
  namespace: %s
spec:
  restartPolicy: Never
  terminationGracePeriodSeconds: 1
%s  securityContext:
%s
  containers:
    - name: main
      image: basin.local/busybox:v1
      imagePullPolicy: Never
      command: ["sh", "-c", %s]
      volumeMounts:
        - name: data
          mountPath: /data
          readOnly: %t
          mountPropagation: HostToContainer
        - name: tmp
          mountPath: /tmp
  volumes:
    - name: tmp
      emptyDir: {}
    - name: data
      persistentVolumeClaim:
        claimName: %s
        readOnly: %t
`, p.Name, ns, nodeSelector(p.Node), sc, strconv.Quote("set -e\n"+p.Script), p.ReadOnly, p.Claim, p.ReadOnly)
}

// runPod creates the pod.
func runPod(t *testing.T, ns string, p pod) {
	t.Helper()
	apply(t, p.yaml(ns))
}

// pvc is a claim's YAML.
func pvc(ns, name, class, mode string) string {
	return fmt.Sprintf(`apiVersion: v1
kind: PersistentVolumeClaim
metadata:
  name: %s
  namespace: %s
spec:
  storageClassName: %q
  accessModes: [%s]
  resources:
    requests:
      storage: 1Gi
`, name, ns, class, mode)
}

// waitBound waits for a claim to be bound and returns its volume's name.
func waitBound(t *testing.T, ns, claim string) string {
	t.Helper()
	waitFor(t, "claim "+ns+"/"+claim+" bound", 90*time.Second, func() bool {
		return jsonpath(ns, "pvc/"+claim, "{.status.phase}") == "Bound"
	})
	return jsonpath(ns, "pvc/"+claim, "{.spec.volumeName}")
}

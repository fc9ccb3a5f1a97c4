//go:build k8se2e

package k8s

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// The cluster installs Basin with `helm install` (hack/k8s/cluster.sh):
// release basin in basin-system, deploy/helm/basin with the values in
// $BASIN_K8S_DIR/values.yaml (tests/k8s/values.yaml, the image, the
// cluster's kubeletDir).

// chart is the chart the cluster installs, from this package's directory.
const chart = "../../deploy/helm/basin"

// release and releaseNamespace name the cluster's Helm release.
const (
	release          = "basin"
	releaseNamespace = "basin-system"
)

// helmErr runs helm on the cluster and returns its combined output.
func helmErr(args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, env.Helm, append([]string{"--kubeconfig", env.Kubeconfig}, args...)...)
	home := filepath.Join(env.Dir, "helm-home")
	cmd.Env = append(os.Environ(), "HELM_CONFIG_HOME="+home, "HELM_CACHE_HOME="+home, "HELM_DATA_HOME="+home)
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// helm runs helm on the cluster; a failure fails the test.
func helm(t *testing.T, args ...string) string {
	t.Helper()
	out, err := helmErr(args...)
	if err != nil {
		t.Fatalf("helm %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return out
}

// helmUpgradeArgs are the arguments of `helm upgrade` of the release
// keeping its values but sets (--set-string), waiting for the rollout.
func helmUpgradeArgs(sets ...string) []string {
	args := []string{"upgrade", release, chart, "-n", releaseNamespace, "--reuse-values", "--wait", "--timeout", "5m"}
	for _, s := range sets {
		args = append(args, "--set-string", s)
	}
	return args
}

// helmUpgrade upgrades the release with sets and waits until the node
// plugin runs its new template on every node.
func helmUpgrade(t *testing.T, sets ...string) {
	t.Helper()
	helm(t, helmUpgradeArgs(sets...)...)
	kubectl(t, "-n", releaseNamespace, "rollout", "status", "daemonset/basin-node", "--timeout=180s")
	kubectl(t, "-n", releaseNamespace, "rollout", "status", "deployment/basin-controller", "--timeout=180s")
}

// loopingReader is slowReader with the small files read again and again
// until /tmp/stop exists (each pass must read the same), so that it reads
// through whatever the scenario does meanwhile.
func loopingReader() string {
	return "CHUNKS=64 PAUSE=1000000\n" + strings.Replace(slowReader,
		`( for f in /data/small/*; do sha256sum "$f"; usleep $PAUSE; done ) | sha256sum | cut -d' ' -f1 > /tmp/small &`,
		`( while [ ! -e /tmp/stop ]; do s=$( (for f in /data/small/*; do sha256sum "$f"; done) | sha256sum | cut -d' ' -f1); echo $s > /tmp/small; [ -z "$first" ] && first=$s; [ "$s" = "$first" ] || { echo "small files changed"; exit 1; }; usleep 100000; done ) &`, 1)
}

// readThrough runs a looping reader of a volume of its own in namespace
// name while change runs, then checks that the pod exited 0 with every
// checksum right and its mount never replaced.
func readThrough(t *testing.T, name string, change func()) {
	t.Helper()
	ns := namespace(t, name)
	big, small := slowDataset(t, name, "", 64)
	staticVolume(t, ns, name, name+"-vol", name, "", "ReadOnlyMany", nil)
	runPod(t, ns, pod{Name: "reader", Claim: name, Script: loopingReader(), ReadOnly: true})
	waitLog(t, ns, "reader", "STARTED", 2*time.Minute)
	change()
	kubectl(t, "-n", ns, "exec", "reader", "--", "touch", "/tmp/stop")
	r := mustSucceed(t, ns, "reader", 3*time.Minute)
	checkSlowReader(t, r, big, small)
}

// TestHelmUpgradeImage: `helm upgrade` to a new image tag while a pod
// reads; the pod exits 0 and its mount is kept.
func TestHelmUpgradeImage(t *testing.T) {
	scenario(t, "helm-upgrade-image")
	tag := tagOf(env.Image)
	repo := strings.TrimSuffix(env.Image, ":"+tag)
	next := tag + "-helm"
	ctrAll(t, "images", "tag", "--force", env.Image, repo+":"+next)
	t.Cleanup(func() {
		if out, err := helmErr(helmUpgradeArgs("image.tag=" + tag)...); err != nil {
			t.Errorf("helm upgrade back to %s: %v\n%s", tag, err, out)
		}
	})
	// The descriptor holder's pods, by UID.
	holders := func() string {
		return kubectl(t, "-n", releaseNamespace, "get", "pods", "-l", "app.kubernetes.io/name=basin-fdholder", "-o", "jsonpath={.items[*].metadata.uid}")
	}
	holdersBefore := holders()
	readThrough(t, "e2e-helm-image", func() {
		helmUpgrade(t, "image.tag="+next)
		t.Logf("upgraded to %s", next)
	})
	for obj, path := range map[string]string{
		"daemonset/basin-node":        "{.spec.template.spec.containers[0].image}",
		"deployment/basin-controller": "{.spec.template.spec.containers[0].image}",
	} {
		if got := jsonpath(releaseNamespace, obj, path); got != repo+":"+next {
			t.Errorf("%s runs %s after the upgrade, want %s", obj, got, repo+":"+next)
		}
	}
	// The holder's updateStrategy is OnDelete: an upgrade never restarts it.
	if after := holders(); after != holdersBefore {
		t.Errorf("the descriptor holder's pods were replaced by the upgrade: %s, before %s", after, holdersBefore)
	}
}

// TestHelmUpgradeNodeResources: `helm upgrade` that changes the node
// plugin's resources while a pod reads; the pod exits 0, its mount is kept,
// and every node plugin pod has the new request.
func TestHelmUpgradeNodeResources(t *testing.T) {
	scenario(t, "helm-upgrade-node-resources")
	before := jsonpath(releaseNamespace, "daemonset/basin-node", "{.spec.template.spec.containers[0].resources.requests.cpu}")
	t.Cleanup(func() {
		if out, err := helmErr(helmUpgradeArgs("node.resources.requests.cpu=" + before)...); err != nil {
			t.Errorf("helm upgrade back to cpu %s: %v\n%s", before, err, out)
		}
	})
	const cpu = "600m"
	readThrough(t, "e2e-helm-resources", func() {
		helmUpgrade(t, "node.resources.requests.cpu="+cpu)
	})
	out := kubectl(t, "-n", releaseNamespace, "get", "pods", "-l", "app.kubernetes.io/name=basin-node",
		"-o", `jsonpath={range .items[*]}{.spec.containers[0].resources.requests.cpu}{"\n"}{end}`)
	got := strings.Fields(out)
	if len(got) != len(env.Nodes) {
		t.Errorf("%d node plugin pods, want %d", len(got), len(env.Nodes))
	}
	for _, c := range got {
		if c != cpu {
			t.Errorf("a node plugin pod requests cpu %s, want %s (was %s)", c, cpu, before)
		}
	}
}

// TestHelmInstallRejectsMistypedValue: `helm install` with kubeletDir: 5
// fails before it creates anything, naming kubeletDir.
func TestHelmInstallRejectsMistypedValue(t *testing.T) {
	scenario(t, "helm-install-mistyped-value")
	f := filepath.Join(t.TempDir(), "values.yaml")
	if err := os.WriteFile(f, []byte("kubeletDir: 5\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	out, err := helmErr("install", "basin-mistyped", chart, "-n", "e2e-helm-mistyped", "--create-namespace", "-f", f)
	if err == nil {
		_, _ = helmErr("uninstall", "basin-mistyped", "-n", "e2e-helm-mistyped")
		t.Fatalf("helm install accepted kubeletDir: 5:\n%s", out)
	}
	t.Log(strings.TrimSpace(out))
	if !strings.Contains(out, "kubeletDir") {
		t.Errorf("the error does not name kubeletDir: %s", out)
	}
	if _, err := helmErr("status", "basin-mistyped", "-n", "e2e-helm-mistyped"); err == nil {
		t.Error("a release basin-mistyped exists")
	}
	_, _ = kubectlErr("delete", "namespace", "e2e-helm-mistyped", "--ignore-not-found")
}

// TestHelmKubeletDir: the cluster's kubelets keep their root elsewhere
// than /var/lib/kubelet (make k8s-e2e), the chart's kubeletDir says where,
// and a pod writes and reads a volume whose staging and pod mounts are
// under that directory on its node.
func TestHelmKubeletDir(t *testing.T) {
	scenario(t, "helm-kubelet-dir")
	const standard = "/var/lib/kubelet"
	if env.KubeletDir == standard || env.KubeletDir == "" {
		t.Fatalf("the cluster's kubelets use %s: run it with K8S_KUBELET_DIR set (make k8s-e2e does)", standard)
	}
	values := helm(t, "get", "values", release, "-n", releaseNamespace, "-o", "yaml")
	if !strings.Contains(values, "kubeletDir: "+env.KubeletDir) {
		t.Fatalf("the release's values do not set kubeletDir %s:\n%s", env.KubeletDir, values)
	}
	ns := namespace(t, "e2e-helm-kubeletdir")
	credentialsSecret(t, "e2e-helm-kubeletdir-creds")
	openBucket(t, "e2e-helm-kubeletdir", true)
	staticVolumeWithSecret(t, ns, "e2e-helm-kubeletdir", "e2e-helm-kubeletdir-vol", "e2e-helm-kubeletdir", "", "ReadWriteMany", nil)
	node := env.Nodes[0]
	runPod(t, ns, pod{Name: "writer", Claim: "e2e-helm-kubeletdir", Node: node,
		Script: "echo hello > /data/hello.txt; [ \"$(cat /data/hello.txt)\" = hello ]; echo WRITTEN; sleep 3600"})
	waitLog(t, ns, "writer", "WRITTEN", 2*time.Minute)
	var under, standardMounts []string
	for _, line := range strings.Split(nodeExec(t, node, "cat", "/proc/self/mountinfo"), "\n") {
		f := strings.Fields(line)
		if len(f) < 10 || !slicesContainsFuse(f) {
			continue
		}
		switch {
		case strings.HasPrefix(f[4], env.KubeletDir+"/"):
			under = append(under, f[4])
		case strings.HasPrefix(f[4], standard+"/"):
			standardMounts = append(standardMounts, f[4])
		}
	}
	t.Logf("FUSE mounts under %s on %s: %q", env.KubeletDir, node, under)
	var staging, target bool
	for _, m := range under {
		staging = staging || strings.Contains(m, "/plugins/kubernetes.io/csi/")
		target = target || (strings.Contains(m, "/pods/") && strings.Contains(m, "/e2e-helm-kubeletdir/"))
	}
	if !staging || !target {
		t.Errorf("want a staging and a pod mount under %s, got %q", env.KubeletDir, under)
	}
	if len(standardMounts) > 0 {
		t.Errorf("FUSE mounts under %s: %q", standard, standardMounts)
	}
}

// slicesContainsFuse reports whether a mountinfo line's file system type
// (the field after "-") is FUSE.
func slicesContainsFuse(f []string) bool {
	for i, x := range f {
		if x == "-" {
			return i+1 < len(f) && strings.HasPrefix(f[i+1], "fuse")
		}
	}
	return false
}

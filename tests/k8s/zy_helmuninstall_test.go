//go:build k8se2e

package k8s

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"path/filepath"
	"strings"
	"testing"
	"time"

	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"
)

// Named to run after every scenario that uses Basin but the node leaving
// (zz_nodeleaves_test.go, which leaves a node behind that no uninstall can
// clean): it uninstalls the release, checks, and installs it again.

// chartObject is an object of the release's manifest.
type chartObject struct{ kind, namespace, name string }

func (o chartObject) String() string { return o.kind + " " + o.namespace + "/" + o.name }

// releaseObjects lists the objects of the release's manifest.
func releaseObjects(t *testing.T) []chartObject {
	t.Helper()
	manifest := helm(t, "get", "manifest", release, "-n", releaseNamespace)
	r := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader([]byte(manifest))))
	var out []chartObject
	for {
		raw, err := r.Read()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		var o struct {
			Kind     string `json:"kind"`
			Metadata struct {
				Name      string `json:"name"`
				Namespace string `json:"namespace"`
			} `json:"metadata"`
		}
		if err := yaml.Unmarshal(raw, &o); err != nil {
			t.Fatal(err)
		}
		if o.Kind != "" {
			out = append(out, chartObject{o.Kind, o.Metadata.Namespace, o.Metadata.Name})
		}
	}
	return out
}

// basinCRDs are the CustomResourceDefinitions the chart installs from its
// crds/ and keeps on uninstall, as Helm does.
var basinCRDs = []string{"volumecaches.basin.csi.dev", "warmups.basin.csi.dev"}

// TestHelmUninstall: `helm uninstall` leaves no object of the release and
// no Basin pod, keeps the CRDs, and leaves no FUSE mount on any node; then
// `helm install` again (the CRDs already there) brings Basin back.
func TestHelmUninstall(t *testing.T) {
	scenario(t, "helm-uninstall")
	objs := releaseObjects(t)
	if len(objs) < 15 {
		t.Fatalf("the release's manifest holds %d objects: %v", len(objs), objs)
	}
	reinstalled := false
	reinstall := func() {
		if reinstalled {
			return
		}
		reinstalled = true
		helm(t, "install", release, chart, "-n", releaseNamespace, "-f", filepath.Join(env.Dir, "values.yaml"), "--wait", "--timeout", "5m")
		kubectl(t, "-n", releaseNamespace, "rollout", "status", "daemonset/basin-node", "--timeout=180s")
		for _, n := range env.Nodes {
			waitFor(t, "CSINode registration of "+n, time.Minute, func() bool {
				return strings.Contains(jsonpath("", "csinode/"+n, "{.spec.drivers[*].name}"), "basin.csi.dev")
			})
		}
	}
	t.Cleanup(func() {
		if !reinstalled {
			reinstall()
		}
	})

	// As documented: the workloads using Basin go first, while the driver
	// runs (the earlier scenarios' namespaces are deleted; kubelet
	// unstages their volumes).
	for _, n := range env.Nodes {
		waitFor(t, "no volume staged on "+n, 2*time.Minute, func() bool { return len(basinMounts(t, n)) == 0 })
	}
	t.Log(strings.TrimSpace(helm(t, "uninstall", release, "-n", releaseNamespace, "--wait", "--timeout", "5m")))
	waitFor(t, "Basin's pods gone", 3*time.Minute, func() bool {
		out, err := kubectlErr("-n", releaseNamespace, "get", "pods", "-l", "app.kubernetes.io/part-of=basin", "-o", "name")
		return err == nil && strings.TrimSpace(out) == ""
	})
	for _, o := range objs {
		args := []string{"get", o.kind + "/" + o.name, "--ignore-not-found", "-o", "name"}
		if o.namespace != "" {
			args = append(args, "-n", o.namespace)
		}
		if out := strings.TrimSpace(kubectl(t, args...)); out != "" {
			t.Errorf("%s is left after helm uninstall", o)
		}
	}
	for _, crd := range basinCRDs {
		if _, err := kubectlErr("get", "crd", crd); err != nil {
			t.Errorf("CRD %s is gone; Helm keeps the CRDs of crds/: %v", crd, err)
		}
	}
	for _, n := range env.Nodes {
		if m := basinMounts(t, n); len(m) > 0 {
			t.Errorf("FUSE mounts left under %s on %s after helm uninstall: %q", env.KubeletDir, n, m)
		}
	}
	t.Logf("%d objects of the release gone, CRDs kept", len(objs))
	reinstall()
}

// basinMounts lists the FUSE mounts under kubelet's directory on node:
// Basin's staging and pod mounts (the node's mount namespace also sees the
// host's mounts, elsewhere).
func basinMounts(t *testing.T, node string) []string {
	t.Helper()
	var out []string
	for _, line := range strings.Split(nodeExec(t, node, "cat", "/proc/self/mountinfo"), "\n") {
		if f := strings.Fields(line); len(f) >= 10 && slicesContainsFuse(f) && strings.HasPrefix(f[4], env.KubeletDir+"/") {
			out = append(out, f[4])
		}
	}
	return out
}

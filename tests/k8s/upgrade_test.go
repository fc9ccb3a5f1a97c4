//go:build k8se2e

package k8s

import (
	"strings"
	"testing"
	"time"
)

// TestNodePluginUpgrade is scenario 4: while a pod reads through an open
// descriptor and walks small files, the node plugin is restarted
// (`kubectl rollout restart`) and then upgraded to another image tag; the
// pod exits 0 with every checksum right and its mount never replaced.
func TestNodePluginUpgrade(t *testing.T) {
	scenario(t, "node-plugin-upgrade")
	ns := namespace(t, "e2e-upgrade")
	big, small := slowDataset(t, "e2e-upgrade", "", 64)
	staticVolume(t, ns, "e2e-upgrade", "e2e-upgrade-vol", "e2e-upgrade", "", "ReadOnlyMany", nil)
	// The reader keeps reading until told to stop: each MiB of the big
	// file after a pause, and every small file again and again.
	script := loopingReader()
	runPod(t, ns, pod{Name: "reader", Claim: "e2e-upgrade", Script: script, ReadOnly: true})
	waitLog(t, ns, "reader", "STARTED", 2*time.Minute)

	ds := []string{"-n", "basin-system"}
	kubectl(t, append(ds, "rollout", "restart", "daemonset/basin-node")...)
	kubectl(t, append(ds, "rollout", "status", "daemonset/basin-node", "--timeout=120s")...)
	t.Log("node plugin restarted")

	// The same build under another tag, as a new release would come.
	next := strings.TrimSuffix(env.Image, ":"+tagOf(env.Image)) + ":" + tagOf(env.Image) + "-next"
	ctrAll(t, "images", "tag", "--force", env.Image, next)
	kubectl(t, append(ds, "set", "image", "daemonset/basin-node", "csi-driver="+next)...)
	kubectl(t, append(ds, "rollout", "status", "daemonset/basin-node", "--timeout=120s")...)
	t.Logf("node plugin upgraded to %s", next)
	t.Cleanup(func() {
		_, _ = kubectlErr(append(ds, "set", "image", "daemonset/basin-node", "csi-driver="+env.Image)...)
		_, _ = kubectlErr(append(ds, "rollout", "status", "daemonset/basin-node", "--timeout=120s")...)
	})

	kubectl(t, "-n", ns, "exec", "reader", "--", "touch", "/tmp/stop")
	r := mustSucceed(t, ns, "reader", 3*time.Minute)
	checkSlowReader(t, r, big, small)
}

// tagOf is the tag of an image reference.
func tagOf(ref string) string { return ref[strings.LastIndex(ref, ":")+1:] }

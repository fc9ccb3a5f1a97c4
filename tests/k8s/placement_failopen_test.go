//go:build k8se2e

package k8s

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// scheduleBound is how long a pod may take from creation to binding
// while the controller is down: the webhook fails open at once (nothing
// listens) or after its timeoutSeconds (3s) if the controller hangs.
const scheduleBound = 10 * time.Second

// TestPlacementFailsOpen is scenario c of cache-aware placement: with
// the controller scaled to zero, pods that use a warm volume are created
// and scheduled within scheduleBound, without a preference; once it is
// back, the preference returns.
func TestPlacementFailsOpen(t *testing.T) {
	scenario(t, "placement-fails-open")
	// The controller is up: the preference is there.
	ns := warmVolume(t, "e2e-placement-down", "e2e-placement-down")

	t.Cleanup(func() { scaleController(t, 1) })
	scaleController(t, 0)
	failedOpen := apiserverCount(t, "apiserver_admission_webhook_fail_open_count", map[string]string{"name": webhookName})
	for i := range 5 {
		name := fmt.Sprintf("down-%d", i)
		start := time.Now()
		node, why := placed(t, ns, name, "e2e-placement-down", "1", false)
		took := time.Since(start)
		t.Logf("%s: created and scheduled on %s in %v", name, node, took.Round(time.Millisecond))
		if took > scheduleBound {
			t.Errorf("%s: took %v with the controller down, bound %v", name, took, scheduleBound)
		}
		if why != "" {
			t.Errorf("%s: annotated %q with the controller down", name, why)
		}
	}

	// The pods went through the webhook's failure policy, not around it.
	if n := apiserverCount(t, "apiserver_admission_webhook_fail_open_count", map[string]string{"name": webhookName}) - failedOpen; n < 5 {
		t.Errorf("the API server failed open %v times for the 5 pods, want 5", n)
	}

	scaleController(t, 1)
	t.Logf("preference back after %d pods", waitPreferred(t, ns, "back", "e2e-placement-down"))
}

// waitPreferred creates pods of claim (named prefix-1, -2, ...) until one
// gets the warm node's preference and lands there, and returns how many
// it took: the webhook serves once its certificate is published and its
// caches hold the claim, its volume and the volume's caches; pods before
// that pass unchanged.
func waitPreferred(t *testing.T, ns, prefix, claim string) int {
	t.Helper()
	i := 0
	waitFor(t, "a preference for "+warmNode.Name, 2*time.Minute, func() bool {
		i++
		node, why := placed(t, ns, fmt.Sprintf("%s-%d", prefix, i), claim, "1", false)
		return node == warmNode.Name && strings.HasPrefix(why, "preferred "+warmNode.Name)
	})
	return i
}

// webhookName is the webhook's name in its configuration.
const webhookName = "placement.basin.csi.dev"

// apiserverCount sums a counter of the API server's metrics over the
// series whose labels include want.
func apiserverCount(t *testing.T, name string, want map[string]string) float64 {
	t.Helper()
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(strings.NewReader(kubectl(t, "get", "--raw", "/metrics")))
	if err != nil {
		t.Fatalf("API server metrics: %v", err)
	}
	return sample(fams, name, want)
}

// scaleController sets the controller Deployment's replicas and waits
// until that many pods run (0: until none is left).
func scaleController(t *testing.T, replicas int) {
	t.Helper()
	kubectl(t, "-n", "basin-system", "scale", "deployment/basin-controller", fmt.Sprintf("--replicas=%d", replicas))
	if replicas == 0 {
		kubectl(t, "-n", "basin-system", "wait", "--for=delete", "pod", "-l", "app.kubernetes.io/name=basin-controller", "--timeout=120s")
		return
	}
	kubectl(t, "-n", "basin-system", "rollout", "status", "deployment/basin-controller", "--timeout=120s")
}

//go:build k8se2e

package k8s

import (
	"context"
	"net/http"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// nodeMetrics is the metrics endpoint of node's node plugin (its pod's
// address: the test process reaches the pod network).
func nodeMetrics(t *testing.T, node string) string {
	t.Helper()
	return "http://" + runningPod(t, "basin-node", node).Status.PodIP + ":9810/metrics"
}

// controllerMetrics is the metrics endpoint of the controller plugin.
func controllerMetrics(t *testing.T) string {
	t.Helper()
	return "http://" + runningPod(t, "basin-controller", "").Status.PodIP + ":9810/metrics"
}

// scrape reads a metrics endpoint.
func scrape(t *testing.T, url string) map[string]*dto.MetricFamily {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("scrape %s: %v", url, err)
	}
	defer func() { _ = resp.Body.Close() }()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("scrape %s: %s", url, resp.Status)
	}
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(resp.Body)
	if err != nil {
		t.Fatalf("scrape %s: %v", url, err)
	}
	return fams
}

// sample sums the samples of a counter or gauge whose labels include want.
func sample(fams map[string]*dto.MetricFamily, name string, want map[string]string) float64 {
	f := fams[name]
	if f == nil {
		return 0
	}
	var sum float64
	for _, m := range f.GetMetric() {
		labels := map[string]string{}
		for _, l := range m.GetLabel() {
			labels[l.GetName()] = l.GetValue()
		}
		ok := true
		for k, v := range want {
			if labels[k] != v {
				ok = false
			}
		}
		if !ok {
			continue
		}
		switch {
		case m.Counter != nil:
			sum += m.GetCounter().GetValue()
		case m.Gauge != nil:
			sum += m.GetGauge().GetValue()
		}
	}
	return sum
}

// TestMetrics is scenario 9: the controller's and the node's metrics
// endpoints answer and count what a pod did: a claim provisioned, a
// volume staged and published, the objects the pod read from the bucket.
func TestMetrics(t *testing.T) {
	scenario(t, "metrics")
	ns := namespace(t, "e2e-metrics")
	credentialsSecret(t, "e2e-metrics-creds")
	openBucket(t, "e2e-metrics", true)
	storageClass(t, "e2e-metrics", "e2e-metrics-creds", map[string]string{"provisioning": "prefix", "bucket": "e2e-metrics"})
	node := env.Nodes[0]
	ctrl0, node0 := scrape(t, controllerMetrics(t)), scrape(t, nodeMetrics(t, node))
	create := map[string]string{"method": "CreateVolume"}
	publish := map[string]string{"method": "NodePublishVolume"}

	apply(t, pvc(ns, "data", "e2e-metrics", "ReadWriteMany"))
	pv := waitBound(t, ns, "data")
	handle := jsonpath("", "pv/"+pv, "{.spec.csi.volumeHandle}")
	runPod(t, ns, pod{Name: "writer", Claim: "data", Node: node, Script: "dd if=/dev/zero of=/data/f bs=1M count=4 conv=fsync 2>/dev/null\ncat /data/f > /dev/null\necho READY\nsleep 3600"})
	waitLog(t, ns, "writer", "READY", 2*time.Minute)

	ctrl1, node1 := scrape(t, controllerMetrics(t)), scrape(t, nodeMetrics(t, node))
	if d := sample(ctrl1, "basin_csi_operations_total", create) - sample(ctrl0, "basin_csi_operations_total", create); d < 1 {
		t.Errorf("the controller counted %v CreateVolume calls for the claim, want at least 1", d)
	}
	if d := sample(node1, "basin_csi_operations_total", publish) - sample(node0, "basin_csi_operations_total", publish); d < 1 {
		t.Errorf("the node plugin counted %v NodePublishVolume calls for the pod, want at least 1", d)
	}
	vol := map[string]string{"volume": handle}
	if up := sample(node1, "basin_volume_scrape_up", vol); up != 1 {
		t.Errorf("basin_volume_scrape_up{volume=%q} = %v, want 1", handle, up)
	}
	if puts := sample(node1, "basin_bucket_requests_total", map[string]string{"volume": handle, "op": "put"}); puts < 1 {
		t.Errorf("the node plugin counted %v PUT requests for the volume the pod wrote to, want at least 1", puts)
	}
	if n := sample(node1, "basin_bucket_bytes_total", map[string]string{"volume": handle, "op": "put"}); n < 4<<20 {
		t.Errorf("the node plugin counted %v bytes uploaded for the volume, want at least 4 MiB", n)
	}
}

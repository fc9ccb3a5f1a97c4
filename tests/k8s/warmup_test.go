//go:build k8se2e

package k8s

import (
	"os"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/yaml"
)

// warmupJob is examples/warmup/job.yaml made to run here: in ns, on the
// claim, with the image under test, on node instead of the GPU nodes, and
// one pod (the example's anti-affinity spreads its pods over nodes).
func warmupJob(t *testing.T, ns, claim, node string) string {
	t.Helper()
	return editExample(t, "warmup/job.yaml", func(job *batchv1.Job) {
		one := int32(1)
		job.Namespace = ns
		job.Spec.Completions, job.Spec.Parallelism = &one, &one
		spec := &job.Spec.Template.Spec
		spec.NodeSelector = map[string]string{corev1.LabelHostname: node}
		c := &spec.Containers[0]
		if c.Image != "ghcr.io/basin-csi/basin:latest" || len(c.Args) == 0 || c.Args[0] != "warmup" {
			t.Fatalf("examples/warmup/job.yaml: unexpected container %s %v", c.Image, c.Args)
		}
		c.Image, c.ImagePullPolicy = env.Image, corev1.PullNever
		found := false
		for i := range spec.Volumes {
			if pvc := spec.Volumes[i].PersistentVolumeClaim; pvc != nil {
				pvc.ClaimName, found = claim, true
			}
		}
		if !found {
			t.Fatal("examples/warmup/job.yaml mounts no claim")
		}
	})
}

// editExample is examples/FILE (one document of type T) changed by edit,
// as YAML.
func editExample[T any](t *testing.T, file string, edit func(*T)) string {
	t.Helper()
	b, err := os.ReadFile("../../examples/" + file)
	if err != nil {
		t.Fatal(err)
	}
	var obj T
	if err := yaml.UnmarshalStrict(b, &obj); err != nil {
		t.Fatalf("examples/%s: %v", file, err)
	}
	edit(&obj)
	out, err := yaml.Marshal(&obj)
	if err != nil {
		t.Fatal(err)
	}
	return string(out)
}

// TestWarmupJob is scenario 8: the warmup Job example warms a dataset;
// the next pod reads every warmed file with zero bucket requests.
func TestWarmupJob(t *testing.T) {
	scenario(t, "warmup")
	ns := namespace(t, "e2e-warmup")
	s := openBucket(t, "e2e-warmup", true)
	sums := putObjects(t, s, "train/", 150, 128<<10)
	const handle = "e2e-warmup-vol"
	// An immutable dataset: listings and "no such object" are trusted
	// forever (with the default 5s negativeMetadataTTL, a lookup of
	// "train" more than 5s after the warmup listed the root asks the
	// bucket whether an object "train" appeared meanwhile).
	staticVolume(t, ns, "e2e-warmup", handle, "e2e-warmup", "", "ReadOnlyMany", map[string]string{"metadataTTL": "-1", "negativeMetadataTTL": "-1"})

	node := env.Nodes[0]
	apply(t, warmupJob(t, ns, "e2e-warmup", node))
	kubectl(t, "-n", ns, "wait", "--for=condition=complete", "job/imagenet-warmup", "--timeout=180s")
	logs := kubectl(t, "-n", ns, "logs", "job/imagenet-warmup")
	t.Logf("warmup: %s", strings.TrimSpace(logs[max(0, strings.LastIndex(strings.TrimSpace(logs), "\n")):]))
	// Its pod gone, the volume is unstaged: the reader's FUSE process is
	// a new one, whose counters start at zero.
	kubectl(t, "-n", ns, "delete", "job", "imagenet-warmup", "--cascade=foreground", "--wait=true")
	waitFor(t, "the volume unstaged", 90*time.Second, func() bool { return len(volumeProcesses(t, handle)) == 0 })
	readWarmed(t, ns, "e2e-warmup", handle, node, sums)
}

// readWarmed runs a reader of every file under /data/train of claim on
// node (handle's volume, unstaged before: the reader's FUSE process is a
// new one) and checks it saw the objects of sums with zero bucket
// requests. It returns the node's metrics scraped then.
func readWarmed(t *testing.T, ns, claim, handle, node string, sums map[string]string) map[string]*dto.MetricFamily {
	t.Helper()
	script := `echo sum=$(sha256sum /data/train/* | sha256sum | cut -d' ' -f1)
echo READY
sleep 3600`
	runPod(t, ns, pod{Name: "reader", Claim: claim, Script: script, ReadOnly: true, Node: node})
	waitLog(t, ns, "reader", "READY", 2*time.Minute)
	log := kubectl(t, "-n", ns, "logs", "reader")
	if got, want := logValue(log, "sum"), digest(sumsListing("/data/train", "train/", sums)); got != want {
		t.Errorf("the reader saw %s, want %s", got, want)
	}
	m := scrape(t, nodeMetrics(t, node))
	vol := map[string]string{"volume": handle}
	if up := sample(m, "basin_volume_scrape_up", vol); up != 1 {
		t.Fatalf("basin_volume_scrape_up{volume=%q} = %v: no metrics of the reader's FUSE process", handle, up)
	}
	if n := sample(m, "basin_bucket_requests_total", vol); n != 0 {
		t.Errorf("the reader's FUSE process sent %v bucket requests, want 0 (all warmed)", n)
		for _, op := range []string{"get", "stat", "list"} {
			t.Logf("  %s: %v", op, sample(m, "basin_bucket_requests_total", map[string]string{"volume": handle, "op": op}))
		}
	}
	return m
}

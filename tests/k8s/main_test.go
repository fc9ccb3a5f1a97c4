//go:build k8se2e

package k8s

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/basin-csi/basin/internal/testserver"
)

// cluster is what `hack/k8s/cluster.sh up` wrote to $BASIN_K8S_DIR/env.
// The test process runs in the control plane's network namespace
// (`cluster.sh exec`): it reaches the API server, MinIO, fake-gcs-server,
// the nodes and the pods' addresses as the control plane does.
type cluster struct {
	Dir, Bin, Kubeconfig, Image string
	// Nodes are the nodes' names in order (node1, node2, ...).
	Nodes []string
	// State is the directory of the nodes' sockets ($State/NODE/containerd.sock).
	State string
	// ControlPlaneIP is the control plane's address on the nodes' bridge.
	ControlPlaneIP string
	// MinIOEndpoint is MinIO as the test process reaches it;
	// MinIOClusterEndpoint as pods and node plugins do (secrets name it).
	MinIOEndpoint, MinIOClusterEndpoint string
	AccessKey, SecretKey                string
	// GCSEndpoint is fake-gcs-server, the same for the tests and the pods.
	GCSEndpoint string
	// KubeletDir is the kubelets' root directory (the chart's kubeletDir).
	KubeletDir string
	// Helm is the helm binary that installed Basin (release basin).
	Helm string
}

// scenarios counts the scenarios run and failed, for the summary line.
type scenarios struct {
	mu                     sync.Mutex
	names, failed, skipped []string
}

var (
	env     cluster
	envErr  error
	results scenarios
)

func TestMain(m *testing.M) {
	env, envErr = loadCluster()
	code := m.Run()
	testserver.Shutdown()
	results.mu.Lock()
	line := fmt.Sprintf("k8s-e2e: nodes=%d scenarios=%d passed=%d failed=%d", len(env.Nodes),
		len(results.names), len(results.names)-len(results.failed)-len(results.skipped), len(results.failed))
	if len(results.skipped) > 0 {
		line += fmt.Sprintf(" skipped=%d (%s)", len(results.skipped), strings.Join(results.skipped, ", "))
	}
	if len(results.failed) > 0 {
		line += " (failed: " + strings.Join(results.failed, ", ") + ")"
	}
	results.mu.Unlock()
	fmt.Println(line)
	if p := os.Getenv("BASIN_K8S_SUMMARY"); p != "" {
		_ = os.WriteFile(p, []byte(line+"\n"), 0o644)
	}
	os.Exit(code)
}

// scenario marks t as one of the scenarios: it is counted in the
// summary, prints "scenario NAME passed" (failed, skipped: one that needs
// more nodes than the cluster has) when it ends, and it fails at once when
// there is no cluster.
func scenario(t *testing.T, name string) {
	t.Helper()
	results.mu.Lock()
	results.names = append(results.names, name)
	results.mu.Unlock()
	t.Cleanup(func() {
		verdict := "passed"
		results.mu.Lock()
		switch {
		case t.Failed():
			verdict = "failed"
			results.failed = append(results.failed, name)
		case t.Skipped():
			verdict = "skipped"
			results.skipped = append(results.skipped, name)
		}
		results.mu.Unlock()
		fmt.Printf("scenario %s %s\n", name, verdict)
	})
	if envErr != nil {
		t.Fatalf("no cluster: %v (run `make k8s-e2e`, or `make k8s-up` first)", envErr)
	}
}

func loadCluster() (cluster, error) {
	dir := os.Getenv("BASIN_K8S_DIR")
	if dir == "" {
		dir = "/var/lib/basin-k8s"
	}
	f, err := os.Open(filepath.Join(dir, "env"))
	if err != nil {
		return cluster{}, err
	}
	defer func() { _ = f.Close() }()
	kv := map[string]string{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if k, v, ok := strings.Cut(strings.TrimPrefix(sc.Text(), "export "), "="); ok {
			kv[k] = strings.Trim(v, `"`)
		}
	}
	c := cluster{
		Dir: kv["BASIN_K8S_DIR"], Bin: kv["BASIN_K8S_BIN"], Kubeconfig: kv["KUBECONFIG"], Image: kv["BASIN_K8S_IMAGE"],
		Nodes: strings.Fields(kv["BASIN_K8S_NODES"]), State: kv["BASIN_K8S_STATE"], ControlPlaneIP: kv["BASIN_K8S_CP_IP"],
		MinIOEndpoint: kv["BASIN_K8S_MINIO_ENDPOINT"], MinIOClusterEndpoint: kv["BASIN_K8S_MINIO_CLUSTER_ENDPOINT"],
		AccessKey: kv["BASIN_K8S_MINIO_ACCESS_KEY"], SecretKey: kv["BASIN_K8S_MINIO_SECRET_KEY"],
		GCSEndpoint: kv["BASIN_K8S_GCS_ENDPOINT"], KubeletDir: kv["BASIN_K8S_KUBELET_DIR"], Helm: kv["BASIN_K8S_HELM"],
	}
	if c.Kubeconfig == "" || c.Bin == "" || c.MinIOEndpoint == "" || c.MinIOClusterEndpoint == "" || len(c.Nodes) == 0 ||
		c.State == "" || c.ControlPlaneIP == "" || c.KubeletDir == "" || c.Helm == "" {
		return cluster{}, fmt.Errorf("%s/env is incomplete (a cluster of an older hack/k8s/cluster.sh?)", dir)
	}
	return c, sc.Err()
}

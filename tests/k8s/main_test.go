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
type cluster struct {
	Dir, Bin, Kubeconfig, Image string
	MinIOEndpoint               string
	AccessKey, SecretKey        string
	GCSEndpoint                 string
	Containerd                  string // containerd's socket
}

// scenarios counts the scenarios run and failed, for the summary line.
type scenarios struct {
	mu            sync.Mutex
	names, failed []string
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
	line := fmt.Sprintf("k8s-e2e: scenarios=%d passed=%d failed=%d", len(results.names), len(results.names)-len(results.failed), len(results.failed))
	if len(results.failed) > 0 {
		line += " (" + strings.Join(results.failed, ", ") + ")"
	}
	results.mu.Unlock()
	fmt.Println(line)
	if p := os.Getenv("BASIN_K8S_SUMMARY"); p != "" {
		_ = os.WriteFile(p, []byte(line+"\n"), 0o644)
	}
	os.Exit(code)
}

// scenario marks t as one of the scenarios: it is counted in the
// summary, prints "scenario NAME passed" (or failed) when it ends, and it
// fails at once when there is no cluster.
func scenario(t *testing.T, name string) {
	t.Helper()
	results.mu.Lock()
	results.names = append(results.names, name)
	results.mu.Unlock()
	t.Cleanup(func() {
		verdict := "passed"
		if t.Failed() {
			verdict = "failed"
			results.mu.Lock()
			results.failed = append(results.failed, name)
			results.mu.Unlock()
		}
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
			kv[k] = v
		}
	}
	c := cluster{
		Dir: kv["BASIN_K8S_DIR"], Bin: kv["BASIN_K8S_BIN"], Kubeconfig: kv["KUBECONFIG"], Image: kv["BASIN_K8S_IMAGE"],
		MinIOEndpoint: kv["BASIN_K8S_MINIO_ENDPOINT"], AccessKey: kv["BASIN_K8S_MINIO_ACCESS_KEY"],
		SecretKey: kv["BASIN_K8S_MINIO_SECRET_KEY"], GCSEndpoint: kv["BASIN_K8S_GCS_ENDPOINT"],
		Containerd: kv["BASIN_K8S_CONTAINERD"],
	}
	if c.Kubeconfig == "" || c.Bin == "" || c.MinIOEndpoint == "" {
		return cluster{}, fmt.Errorf("%s/env is incomplete", dir)
	}
	return c, sc.Err()
}

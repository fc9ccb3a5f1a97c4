package manifests

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"slices"
	"sort"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/runtime"

	"github.com/basin-csi/basin/internal/testserver"
)

// chartDir is the Helm chart that installs what deployDir does.
const chartDir = "deploy/helm/basin"

// releaseNamespace is the namespace the kustomization installs into, and
// the one the chart is rendered for when the two are compared.
const releaseNamespace = "basin-system"

// helmLabels are the labels the chart adds to every object it templates
// for Helm's bookkeeping, which the kustomize manifests do not carry.
var helmLabels = []string{"app.kubernetes.io/managed-by", "app.kubernetes.io/instance", "helm.sh/chart"}

// helm runs the helm binary with args in the repository root and returns
// its standard output; the error holds its standard error.
func helm(t *testing.T, args ...string) ([]byte, error) {
	t.Helper()
	bin := testserver.RequireBinary(t, "helm", "hack/install-tools.sh (make tools)")
	cmd := exec.Command(bin, args...)
	cmd.Dir = repoRoot
	// No user configuration or cache of the machine's own helm.
	home := t.TempDir()
	cmd.Env = append(os.Environ(), "HELM_CONFIG_HOME="+home, "HELM_CACHE_HOME="+home, "HELM_DATA_HOME="+home)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return out, fmt.Errorf("helm %s: %w: %s%s", strings.Join(args, " "), err, stderr.Bytes(), out)
	}
	return out, nil
}

// valuesFile writes values (YAML) to a file and returns the -f arguments
// naming it; "" gives none.
func valuesFile(t *testing.T, values string) []string {
	t.Helper()
	if values == "" {
		return nil
	}
	// Not under t.TempDir(): helm splits -f at commas, which subtest
	// names may hold.
	dir, err := os.MkdirTemp("", "basin-values-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	f := filepath.Join(dir, "values.yaml")
	if err := os.WriteFile(f, []byte(values), 0o600); err != nil {
		t.Fatal(err)
	}
	return []string{"-f", f}
}

// helmTemplate renders the chart, CRDs included, with values (YAML text;
// "" for the defaults) into releaseNamespace.
func helmTemplate(t *testing.T, values string) ([]byte, error) {
	t.Helper()
	args := append([]string{"template", "basin", chartDir, "--namespace", releaseNamespace, "--include-crds"}, valuesFile(t, values)...)
	return helm(t, args...)
}

// renderChart renders the chart with values and decodes every object
// strictly, failing the test on any error.
func renderChart(t *testing.T, values string) []document {
	t.Helper()
	out, err := helmTemplate(t, values)
	if err != nil {
		t.Fatal(err)
	}
	dec, err := strictDecoder()
	if err != nil {
		t.Fatal(err)
	}
	docs, err := decodeDocuments(dec, "helm template", out)
	if err != nil {
		t.Fatal(err)
	}
	return docs
}

// object is a decoded object as a generic map, for field-by-field
// comparison.
type object = map[string]any

// clusterScopedUnknownToKustomize are cluster-scoped kinds that kustomize's
// namespace transformer does not know as such: it gives them the
// kustomization's namespace, which the API server ignores.
var clusterScopedUnknownToKustomize = []string{"ValidatingAdmissionPolicy", "ValidatingAdmissionPolicyBinding"}

// objectsByKey converts docs to generic maps keyed by kind, namespace and
// name; drop lists labels to remove from each object's metadata.
func objectsByKey(t *testing.T, docs []document, drop func(kind string) []string) map[string]object {
	t.Helper()
	out := map[string]object{}
	for _, d := range docs {
		m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(d.obj)
		if err != nil {
			t.Fatalf("%s: %v", d, err)
		}
		kind := kindOf(d.obj)
		meta, _ := m["metadata"].(map[string]any)
		if slices.Contains(clusterScopedUnknownToKustomize, kind) {
			delete(meta, "namespace")
		}
		key := fmt.Sprintf("%s %v/%v", kind, meta["namespace"], meta["name"])
		if _, dup := out[key]; dup {
			t.Errorf("%s: %s twice", d, key)
		}
		if labels, ok := meta["labels"].(map[string]any); ok {
			for _, l := range drop(kind) {
				delete(labels, l)
			}
			if len(labels) == 0 {
				delete(meta, "labels")
			}
		}
		out[key] = m
	}
	return out
}

// kindOf is the kind of a typed object: the Go types of the API are named
// after their kinds.
func kindOf(obj runtime.Object) string { return reflect.TypeOf(obj).Elem().Name() }

// diff lists the paths where a and b differ, at most limit of them.
func diff(a, b any, at string, limit int) []string {
	if reflect.DeepEqual(a, b) {
		return nil
	}
	am, aok := a.(map[string]any)
	bm, bok := b.(map[string]any)
	if aok && bok {
		keys := map[string]bool{}
		for k := range am {
			keys[k] = true
		}
		for k := range bm {
			keys[k] = true
		}
		var sorted []string
		for k := range keys {
			sorted = append(sorted, k)
		}
		sort.Strings(sorted)
		var out []string
		for _, k := range sorted {
			out = append(out, diff(am[k], bm[k], at+"."+k, limit-len(out))...)
			if len(out) >= limit {
				break
			}
		}
		return out
	}
	al, aok := a.([]any)
	bl, bok := b.([]any)
	if aok && bok && len(al) == len(bl) {
		var out []string
		for i := range al {
			out = append(out, diff(al[i], bl[i], fmt.Sprintf("%s[%d]", at, i), limit-len(out))...)
			if len(out) >= limit {
				break
			}
		}
		return out
	}
	return []string{fmt.Sprintf("%s: %v vs %v", at, a, b)}
}

// TestChartEqualsKustomize is the one source of truth between the two
// install paths: the chart rendered with its default values yields the
// objects of `kubectl kustomize deploy/kubernetes`, with the same fields.
// The differences it allows are Helm's bookkeeping labels, the Namespace
// (a chart cannot create its own release namespace: helm install
// --create-namespace does) and the label kustomize adds to the CRDs (Helm
// installs crds/ as pkg/api generates them).
func TestChartEqualsKustomize(t *testing.T) {
	kustomized := objectsByKey(t, kustomizeBuild(t), func(kind string) []string {
		if kind == "CustomResourceDefinition" {
			return []string{"app.kubernetes.io/part-of"}
		}
		return nil
	})
	namespace := "Namespace <nil>/" + releaseNamespace
	if _, ok := kustomized[namespace]; !ok {
		t.Errorf("the kustomization does not create %s", namespace)
	}
	delete(kustomized, namespace)
	helmed := objectsByKey(t, renderChart(t, ""), func(string) []string { return helmLabels })
	if len(kustomized) < 20 {
		t.Fatalf("kustomize rendered %d objects", len(kustomized))
	}
	for key, want := range kustomized {
		got, ok := helmed[key]
		if !ok {
			t.Errorf("%s: in the kustomize manifests, not in the chart", key)
			continue
		}
		for _, d := range diff(want, got, "", 10) {
			t.Errorf("%s: kustomize vs chart differ at %s", key, d)
		}
	}
	for key := range helmed {
		if _, ok := kustomized[key]; !ok {
			t.Errorf("%s: in the chart, not in the kustomize manifests", key)
		}
	}
	t.Logf("%d objects compared", len(kustomized))
}

// TestDiffFindsDifferences: the comparison sees a changed, a missing and
// an added field inside lists and maps.
func TestDiffFindsDifferences(t *testing.T) {
	a := object{"spec": object{"args": []any{"--v=2"}, "replicas": int64(1)}}
	b := object{"spec": object{"args": []any{"--v=4"}, "paused": true}}
	got := diff(a, b, "", 10)
	want := []string{".spec.args[0]: --v=2 vs --v=4", ".spec.paused: <nil> vs true", ".spec.replicas: 1 vs <nil>"}
	if !slices.Equal(got, want) {
		t.Errorf("diff = %q, want %q", got, want)
	}
	if d := diff(a, a, "", 10); d != nil {
		t.Errorf("diff of equal objects = %q", d)
	}
}

// TestHelmLint: the chart lints clean in strict mode (warnings fail).
func TestHelmLint(t *testing.T) {
	out, err := helm(t, "lint", "--strict", "--namespace", releaseNamespace, chartDir)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(out), "1 chart(s) linted, 0 chart(s) failed") {
		t.Errorf("helm lint: %s", out)
	}
	for line := range strings.Lines(string(out)) {
		if strings.Contains(line, "[WARNING]") || strings.Contains(line, "[ERROR]") {
			t.Errorf("helm lint: %s", line)
		}
	}
}

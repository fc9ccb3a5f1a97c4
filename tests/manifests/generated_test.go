package manifests

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/basin-csi/basin/internal/testserver"
)

// TestGeneratedFilesAreCurrent generates the deep-copy functions and the
// CRDs from pkg/api into a temporary directory (controller-gen, as
// make generate does) and compares them with the committed files (the
// CRDs in the kustomization and in the Helm chart): a change of the API
// types without `make generate` fails here.
func TestGeneratedFilesAreCurrent(t *testing.T) {
	gen := testserver.RequireBinary(t, "controller-gen", "hack/install-tools.sh (make tools)")
	out := t.TempDir()
	cmd := exec.Command(gen, "object", "paths=./pkg/api/...", "output:object:dir="+filepath.Join(out, "object"),
		"crd:crdVersions=v1", "output:crd:dir="+filepath.Join(out, "crd"))
	cmd.Dir = repoRoot
	if msg, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("controller-gen: %v\n%s", err, msg)
	}
	compare := func(generated, committed string) {
		t.Helper()
		want, err := os.ReadFile(generated)
		if err != nil {
			t.Fatal(err)
		}
		got, err := os.ReadFile(filepath.Join(repoRoot, committed))
		if err != nil {
			t.Fatalf("%s: %v (run make generate)", committed, err)
		}
		if !bytes.Equal(got, want) {
			t.Errorf("%s is not what pkg/api generates: run make generate and commit the result", committed)
		}
	}
	compare(filepath.Join(out, "object", "zz_generated.deepcopy.go"), "pkg/api/v1alpha1/zz_generated.deepcopy.go")
	crds, err := filepath.Glob(filepath.Join(out, "crd", "*.yaml"))
	if err != nil || len(crds) == 0 {
		t.Fatalf("controller-gen wrote no CRD (%v)", err)
	}
	// The kustomization's CRDs and the Helm chart's crds/ (installed as
	// they are, kept on uninstall) are both copies of what pkg/api
	// generates.
	for _, dir := range []string{"deploy/kubernetes/crds", "deploy/helm/basin/crds"} {
		committed, _ := filepath.Glob(filepath.Join(repoRoot, dir, "*.yaml"))
		if len(committed) != len(crds) {
			t.Errorf("%s holds %d CRDs, pkg/api generates %d: run make generate", dir, len(committed), len(crds))
		}
		for _, c := range crds {
			compare(c, filepath.Join(dir, filepath.Base(c)))
		}
	}
}

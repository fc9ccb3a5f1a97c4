package manifests

import (
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"

	"bufio"
	"bytes"
	"errors"
	"fmt"
	basinv1 "github.com/basin-csi/basin/pkg/api/v1alpha1"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"
)

// repoRoot is the repository root seen from this package's directory,
// where go test runs.
const repoRoot = "../.."

// manifestDirs are the directories whose YAML files are manifests.
var manifestDirs = []string{"deploy", "examples"}

// chartsDir holds the Helm charts: their templates are not manifests
// until rendered (tests/helm renders and checks them; their crds/ are
// copies of deploy/kubernetes/crds, generated_test.go).
const chartsDir = "deploy/helm"

// kustomizationFile is the name of kustomize's configuration, which is not
// a Kubernetes object.
const kustomizationFile = "kustomization.yaml"

// document is one decoded YAML document.
type document struct {
	file  string // relative to the repository root
	index int    // position in the file, from 0
	obj   runtime.Object
}

func (d document) String() string { return fmt.Sprintf("%s#%d", d.file, d.index) }

// strictDecoder decodes the kinds Basin's manifests may use and fails on
// any other kind and on unknown or duplicate fields.
func strictDecoder() (runtime.Decoder, error) {
	scheme := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{
		corev1.AddToScheme, appsv1.AddToScheme, batchv1.AddToScheme,
		rbacv1.AddToScheme, storagev1.AddToScheme,
		apiextensionsv1.AddToScheme, admissionregistrationv1.AddToScheme, basinv1.AddToScheme,
	} {
		if err := add(scheme); err != nil {
			return nil, err
		}
	}
	return serializer.NewCodecFactory(scheme, serializer.EnableStrict).UniversalDeserializer(), nil
}

// decodeDocuments splits a YAML stream into documents and decodes each
// strictly. Documents holding only comments are skipped.
func decodeDocuments(dec runtime.Decoder, file string, data []byte) ([]document, error) {
	r := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(data)))
	var docs []document
	var errs []error
	for i := 0; ; i++ {
		raw, err := r.Read()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("%s: %w", file, err)
		}
		if empty, err := isEmpty(raw); err != nil || empty {
			if err != nil {
				errs = append(errs, fmt.Errorf("%s#%d: %w", file, i, err))
			}
			continue
		}
		obj, _, err := dec.Decode(raw, nil, nil)
		if err != nil {
			errs = append(errs, fmt.Errorf("%s#%d: %w", file, i, err))
			continue
		}
		docs = append(docs, document{file: file, index: i, obj: obj})
	}
	return docs, errors.Join(errs...)
}

// isEmpty reports whether a YAML document holds no value (only comments).
func isEmpty(raw []byte) (bool, error) {
	j, err := yaml.YAMLToJSON(raw)
	if err != nil {
		return false, err
	}
	return string(bytes.TrimSpace(j)) == "null", nil
}

// yamlFiles lists the YAML files under dir (relative to the repository
// root), kustomizations and charts excluded.
func yamlFiles(dir string) ([]string, error) {
	var files []string
	err := filepath.WalkDir(filepath.Join(repoRoot, dir), func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && p == filepath.Join(repoRoot, chartsDir) {
			return filepath.SkipDir
		}
		ext := filepath.Ext(p)
		if d.IsDir() || (ext != ".yaml" && ext != ".yml") || d.Name() == kustomizationFile {
			return nil
		}
		rel, err := filepath.Rel(repoRoot, p)
		files = append(files, rel)
		return err
	})
	return files, err
}

// loadManifests decodes every manifest of manifestDirs, failing the test
// on any error.
func loadManifests(t *testing.T) []document {
	t.Helper()
	dec, err := strictDecoder()
	if err != nil {
		t.Fatal(err)
	}
	var docs []document
	for _, dir := range manifestDirs {
		files, err := yamlFiles(dir)
		if err != nil {
			t.Fatal(err)
		}
		if len(files) == 0 {
			t.Fatalf("no YAML files under %s", dir)
		}
		for _, f := range files {
			data, err := os.ReadFile(filepath.Join(repoRoot, f))
			if err != nil {
				t.Fatal(err)
			}
			d, err := decodeDocuments(dec, f, data)
			if err != nil {
				t.Error(err)
			}
			docs = append(docs, d...)
		}
	}
	return docs
}

// under returns the documents whose file is under dir.
func under(docs []document, dir string) []document {
	var out []document
	for _, d := range docs {
		if strings.HasPrefix(d.file, dir+string(filepath.Separator)) {
			out = append(out, d)
		}
	}
	return out
}

package conventions

import (
	"go/parser"
	"go/token"
	"io/fs"
	"maps"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// moduleRoot is the repository's root directory.
func moduleRoot(t *testing.T) string {
	t.Helper()
	out, err := exec.Command("go", "env", "GOMOD").Output()
	if err != nil {
		t.Fatalf("go env GOMOD: %v", err)
	}
	return filepath.Dir(strings.TrimSpace(string(out)))
}

// warmupGlue are the files through which the warmup engine's callers
// reach it: the command, the node plugin, the Warmup controller.
var warmupGlue = []string{"cmd/csi-driver/warmup.go", "pkg/driver/node_warmup.go", "pkg/warmupctl/engine.go"}

// importers returns the non-test Go files under root, outside pkg itself,
// that import pkg (module-relative), relative to root.
func importers(t *testing.T, root, pkg string) []string {
	t.Helper()
	fset := token.NewFileSet()
	var out []string
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel := filepath.ToSlash(strings.TrimPrefix(path, root+"/"))
		if d.IsDir() {
			if n := d.Name(); path != root && (strings.HasPrefix(n, ".") || n == "testdata" || n == "vendor" || rel == pkg) {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, parser.ImportsOnly)
		if err != nil {
			return err
		}
		for _, im := range f.Imports {
			if p, _ := strconv.Unquote(im.Path.Value); p == module+pkg {
				out = append(out, rel)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// TestWarmupGlueInOneFilePerCaller: the warmup engine (pkg/warmup) has
// one engine and one glue file per caller; a second file of a caller
// that imports the engine fails, and so does a glue file that stops
// importing it (the list would be stale).
func TestWarmupGlueInOneFilePerCaller(t *testing.T) {
	got := importers(t, moduleRoot(t), "pkg/warmup")
	have := map[string]bool{}
	for _, f := range got {
		have[f] = true
	}
	for _, f := range slices.Sorted(maps.Keys(have)) {
		if !slices.Contains(warmupGlue, f) {
			t.Errorf("%s imports pkg/warmup: a caller's glue to the engine belongs in its one file (%s)", f, strings.Join(warmupGlue, ", "))
		}
	}
	for _, f := range warmupGlue {
		if !have[f] {
			t.Errorf("%s no longer imports pkg/warmup: update warmupGlue and the package documentation", f)
		}
	}
}

package manifests

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// architectureHeading is the README section that names every package.
const architectureHeading = "## Architecture"

// readmeSection returns the text of the README section under heading, up
// to the next section.
func readmeSection(t *testing.T, heading string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(repoRoot, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, rest, ok := strings.Cut(string(b), "\n"+heading+"\n")
	if !ok {
		t.Fatalf("README.md has no %q section", heading)
	}
	if i := strings.Index(rest, "\n## "); i >= 0 {
		rest = rest[:i]
	}
	return rest
}

// unnamed returns the packages (module-relative) that section does not
// name as `path`.
func unnamed(section string, pkgs []string) []string {
	var out []string
	for _, p := range pkgs {
		if !strings.Contains(section, "`"+p+"`") {
			out = append(out, p)
		}
	}
	return out
}

// TestReadmeNamesEveryPackage: the README's architecture section names
// every package under pkg/ and internal/, so a new package lands with
// its line in the map.
func TestReadmeNamesEveryPackage(t *testing.T) {
	cmd := exec.Command("go", "list", "-f", "{{.ImportPath}}", "./pkg/...", "./internal/...", "./cmd/...")
	cmd.Dir = repoRoot
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	var pkgs []string
	for line := range strings.Lines(string(out)) {
		_, rel, ok := strings.Cut(strings.TrimSpace(line), "github.com/basin-csi/basin/")
		if ok {
			pkgs = append(pkgs, rel)
		}
	}
	if len(pkgs) < 20 {
		t.Fatalf("go list found %d packages: %q", len(pkgs), pkgs)
	}
	for _, p := range unnamed(readmeSection(t, architectureHeading), pkgs) {
		t.Errorf("README.md %q does not name `%s` and its job", architectureHeading, p)
	}
}

// TestUnnamedFindsMissing: the check sees a package left out, and a path
// that merely starts like a named one does not count.
func TestUnnamedFindsMissing(t *testing.T) {
	section := "| `pkg/fuse` | the file system |\n| `pkg/cache` | the cache |"
	got := unnamed(section, []string{"pkg/fuse", "pkg/fuse/takeover", "pkg/cache", "pkg/cach"})
	if strings.Join(got, " ") != "pkg/fuse/takeover pkg/cach" {
		t.Errorf("unnamed = %q, want pkg/fuse/takeover and pkg/cach", got)
	}
}

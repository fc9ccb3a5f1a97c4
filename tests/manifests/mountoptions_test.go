package manifests

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/basin-csi/basin/pkg/mountspec"
)

// TestDocsMountOptions requires the mountOptions row of the attribute
// tables (README and docs/kubernetes.md) to name every accepted mount
// option, and no other.
func TestDocsMountOptions(t *testing.T) {
	accepted := mountspec.AcceptedOptions()
	for _, doc := range []string{"README.md", kubernetesDoc} {
		b, err := os.ReadFile(filepath.Join(repoRoot, doc))
		if err != nil {
			t.Fatal(err)
		}
		var row string
		for line := range strings.SplitSeq(string(b), "\n") {
			if strings.HasPrefix(line, "| `"+mountspec.KeyMountOptions+"` |") {
				row = line
			}
		}
		if row == "" {
			t.Errorf("%s: no %s row", doc, mountspec.KeyMountOptions)
			continue
		}
		cells := strings.Split(row, "|")
		meaning := codeSpans(cells[len(cells)-2])
		for _, o := range accepted {
			if !slices.Contains(meaning, o) {
				t.Errorf("%s: the %s row does not name the accepted option %q", doc, mountspec.KeyMountOptions, o)
			}
		}
		for _, o := range meaning {
			if !slices.Contains(accepted, o) && o != "readOnly: true" && !strings.HasPrefix(o, "spec.") && o != "InvalidArgument" {
				t.Errorf("%s: the %s row names %q, which is not an accepted option", doc, mountspec.KeyMountOptions, o)
			}
		}
	}
}

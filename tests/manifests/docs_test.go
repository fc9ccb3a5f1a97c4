package manifests

import (
	"bufio"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/basin-csi/basin/pkg/driver/volumeattr"
)

// kubernetesDoc is the user documentation of the volume attributes.
const kubernetesDoc = "docs/kubernetes.md"

// Section headings of kubernetesDoc holding the two tables.
const (
	attributesHeading = "## Volume attributes"
	secretsHeading    = "## Secret keys"
)

// tableRows returns, for the table under heading, the cells of each row
// whose first cell is a `key`, by key.
func tableRows(t *testing.T, heading string) map[string][]string {
	t.Helper()
	f, err := os.Open(filepath.Join(repoRoot, kubernetesDoc))
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = f.Close() }()
	rows := map[string][]string{}
	in := false
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, "## ") {
			in = line == heading
			continue
		}
		if !in || !strings.HasPrefix(line, "| `") {
			continue
		}
		// Split on cell separators, not on escaped pipes (\|) inside cells.
		const escapedPipe = "\x00"
		line = strings.ReplaceAll(strings.Trim(line, "| "), `\|`, escapedPipe)
		var cells []string
		for c := range strings.SplitSeq(line, "|") {
			cells = append(cells, strings.ReplaceAll(strings.TrimSpace(c), escapedPipe, "|"))
		}
		key := strings.Trim(cells[0], "`")
		if _, dup := rows[key]; dup {
			t.Errorf("%s: %q is documented twice under %q", kubernetesDoc, key, heading)
		}
		rows[key] = cells
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	if len(rows) == 0 {
		t.Fatalf("%s: no table rows under %q", kubernetesDoc, heading)
	}
	return rows
}

// codeSpans returns the `code` spans of a table cell.
func codeSpans(cell string) []string {
	var out []string
	for _, m := range regexp.MustCompile("`([^`]*)`").FindAllStringSubmatch(cell, -1) {
		out = append(out, m[1])
	}
	return out
}

// TestDocsAttributeTable requires a row for every attribute key, no row
// for a key the parser does not know, and, where the parser has a default,
// a default cell whose value parses to it.
func TestDocsAttributeTable(t *testing.T) {
	rows := tableRows(t, attributesHeading)
	keys := volumeattr.Keys()
	defaults := volumeattr.Encode(volumeattr.Defaults())
	for _, k := range keys {
		t.Run(k, func(t *testing.T) {
			cells, ok := rows[k]
			if !ok {
				t.Fatalf("%s: attribute %q is not in the table", kubernetesDoc, k)
			}
			if len(cells) != 4 || cells[3] == "" {
				t.Fatalf("%s: row of %q has %d cells %q, want key | type | default | meaning", kubernetesDoc, k, len(cells), cells)
			}
			want, hasDefault := defaults[k]
			if !hasDefault {
				return
			}
			var seen []string
			for _, v := range codeSpans(cells[2]) {
				a, err := volumeattr.Parse(map[string]string{k: v}, nil)
				if err != nil {
					continue
				}
				got := volumeattr.Encode(a)[k]
				if got == want {
					return
				}
				seen = append(seen, got)
			}
			t.Errorf("%s: default of %q is documented as %q (parses to %q), the parser's is %q", kubernetesDoc, k, cells[2], seen, want)
		})
	}
	for k := range rows {
		if !slices.Contains(keys, k) {
			t.Errorf("%s documents %q, which volumeattr does not accept", kubernetesDoc, k)
		}
	}
}

func TestDocsSecretTable(t *testing.T) {
	rows := tableRows(t, secretsHeading)
	keys := volumeattr.SecretKeys()
	for _, k := range keys {
		if _, ok := rows[k]; !ok {
			t.Errorf("%s: secret key %q is not in the table", kubernetesDoc, k)
		}
	}
	for k := range rows {
		if !slices.Contains(keys, k) {
			t.Errorf("%s documents secret key %q, which volumeattr does not accept", kubernetesDoc, k)
		}
	}
}

package warmup

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// TestStateFileRecords: a file recorded warm is skipped while unchanged
// and warmed again once it changed; a torn last line (a crash) is
// ignored; loading compacts the file.
func TestStateFileRecords(t *testing.T) {
	root := tree(t, map[string]int{"f": 10, "dir/g": 20})
	f := filepath.Join(root, "f")
	state := filepath.Join(t.TempDir(), "w.state")
	fi, err := os.Stat(f)
	if err != nil {
		t.Fatal(err)
	}
	paths := []string{f, filepath.Join(root, "dir"), filepath.Join(t.TempDir(), "missing")}
	content := header(paths, "data") + "\n" +
		"f 10 " + strconv.FormatInt(fi.ModTime().UnixNano(), 10) + " " + strconv.Quote(f) + "\n" +
		"d 1 20 " + strconv.Quote(filepath.Join(root, "dir")) + "\n" +
		"f 20 1 " + strconv.Quote(filepath.Join(root, "dir", "g")) + "\n" + // covered by the d line
		"f 12 3" // torn
	if err := os.WriteFile(state, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	res, err := Run(t.Context(), paths, Options{StateFile: state})
	if err != nil {
		t.Fatal(err)
	}
	if res.Files != 0 || res.SkippedFiles != 2 || res.SkippedBytes != 30 || res.Errors != 1 {
		t.Fatalf("run over recorded files: %+v", res.Progress)
	}
	b, err := os.ReadFile(state)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(b), strconv.Quote(filepath.Join(root, "dir", "g"))) || strings.Contains(string(b), "f 12 3") {
		t.Errorf("state file not compacted:\n%s", b)
	}

	if err := os.WriteFile(f, []byte("changed, longer"), 0o644); err != nil {
		t.Fatal(err)
	}
	res, err = Run(t.Context(), paths, Options{StateFile: state})
	if err != nil {
		t.Fatal(err)
	}
	if res.Files != 1 || res.Bytes != 15 || res.SkippedFiles != 1 {
		t.Errorf("run after a change: %+v; want the changed file read again", res.Progress)
	}
}

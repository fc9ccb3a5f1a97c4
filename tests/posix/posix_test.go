package posix

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/hanwen/go-fuse/v2/posixtest"

	"github.com/basin-csi/basin/internal/testserver"
)

const (
	// caseEnv and dirEnv select the child's case and directory.
	caseEnv = "BASIN_POSIX_CASE"
	dirEnv  = "BASIN_POSIX_DIR"
	// reportEnv names a file to write the results table to.
	reportEnv = "BASIN_POSIX_REPORT"
	// caseTimeout bounds one case; a case past it is a failure (hang).
	caseTimeout = 2 * time.Minute
)

func TestMain(m *testing.M) {
	code := m.Run()
	testserver.Shutdown()
	os.Exit(code)
}

// TestPosixCase runs one posixtest case, in the child process
// TestPosixConformance starts for it; in any other run it has nothing to
// do.
func TestPosixCase(t *testing.T) {
	name, dir := os.Getenv(caseEnv), os.Getenv(dirEnv)
	if name == "" {
		return // not a child
	}
	fn, ok := posixtest.All[name]
	if !ok {
		t.Fatalf("no posixtest case %q", name)
	}
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatalf("mkdir of the case's directory: %v", err)
	}
	fn(t, dir)
}

// TestPosixConformance runs every posixtest case on a Basin mount and on
// rclone's mount of one MinIO bucket (each under its own prefix), and
// checks Basin's failures against docs/conformance.md and against rclone.
func TestPosixConformance(t *testing.T) {
	if os.Getenv(caseEnv) != "" {
		return // a child runs TestPosixCase only
	}
	b := newBucket(t)
	mounts := []struct {
		name string
		dir  string
	}{
		{"basin", mountBasin(t, b, "basin/")},
		{"rclone", mountRclone(t, b, "rclone/")},
	}
	names := make([]string, 0, len(posixtest.All))
	for name := range posixtest.All {
		names = append(names, name)
	}
	slices.Sort(names)
	results := map[string]map[string]result{} // mount → case → result
	for _, m := range mounts {
		results[m.name] = map[string]result{}
		for _, name := range names {
			r := runCase(t, name, filepath.Join(m.dir, name))
			results[m.name][name] = r
			if !r.pass {
				t.Logf("%s: %s fails: %s", m.name, name, r.why)
			}
		}
	}
	table := resultTable(names, results["basin"], results["rclone"])
	t.Logf("results:\n%s", table)
	if path := os.Getenv(reportEnv); path != "" {
		if err := os.WriteFile(path, []byte(table), 0o644); err != nil {
			t.Error(err)
		}
	}

	documented, err := documentedFailures("../../docs/conformance.md")
	if err != nil {
		t.Fatal(err)
	}
	basinFails, rcloneFails := failures(results["basin"]), failures(results["rclone"])
	for _, name := range basinFails {
		if !documented[name] {
			t.Errorf("Basin fails %s, which docs/conformance.md does not list as a limitation", name)
		}
	}
	for name := range documented {
		if r, ok := results["basin"][name]; ok && r.pass {
			t.Logf("Basin passes %s now: remove it from docs/conformance.md's limitations", name)
		}
	}
	if len(basinFails) > len(rcloneFails) {
		t.Errorf("Basin fails %d cases %v, rclone %d %v", len(basinFails), basinFails, len(rcloneFails), rcloneFails)
	}
	if len(rcloneFails) == len(names) {
		t.Errorf("rclone failed every case: the reference mount did not work")
	}
	t.Logf("of %d cases Basin fails %d, rclone %d", len(names), len(basinFails), len(rcloneFails))
}

// result is one case's outcome on one mount.
type result struct {
	pass bool
	why  string // the failure's first lines
}

// runCase runs posixtest case name in a child process, in directory dir
// (created by the child).
func runCase(t *testing.T, name, dir string) result {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), caseTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, os.Args[0], "-test.run=^TestPosixCase$", "-test.v", "-test.count=1")
	cmd.Env = append(os.Environ(), caseEnv+"="+name, dirEnv+"="+dir)
	cmd.WaitDelay = 10 * time.Second
	out, err := cmd.CombinedOutput()
	if err == nil {
		return result{pass: true}
	}
	if errors.Is(ctx.Err(), context.DeadlineExceeded) {
		return result{why: fmt.Sprintf("no result after %v (hung)", caseTimeout)}
	}
	return result{why: failureLines(string(out))}
}

// failureLines keeps the lines of a child's output that say why it
// failed (the test's own messages).
func failureLines(out string) string {
	var keep []string
	for _, l := range strings.Split(out, "\n") {
		l = strings.TrimSpace(l)
		if strings.Contains(l, ".go:") && len(keep) < 4 {
			keep = append(keep, l)
		}
	}
	if len(keep) == 0 {
		return strings.TrimSpace(out)
	}
	return strings.Join(keep, " | ")
}

// failures lists the failed cases, sorted.
func failures(rs map[string]result) []string {
	var out []string
	for name, r := range rs {
		if !r.pass {
			out = append(out, name)
		}
	}
	slices.Sort(out)
	return out
}

// resultTable is the Markdown table of the results, one row per case.
func resultTable(names []string, basin, rclone map[string]result) string {
	mark := func(r result) string {
		if r.pass {
			return "pass"
		}
		return "FAIL"
	}
	var b strings.Builder
	b.WriteString("| Case | Basin | rclone |\n|---|---|---|\n")
	for _, name := range names {
		fmt.Fprintf(&b, "| %s | %s | %s |\n", name, mark(basin[name]), mark(rclone[name]))
	}
	fmt.Fprintf(&b, "| **failed** | **%d** | **%d** |\n", len(failures(basin)), len(failures(rclone)))
	return b.String()
}

// documentedFailures reads the cases docs/conformance.md lists as Basin's
// limitations: the first column, in backquotes, of the table rows after
// the heading "## Limitations".
func documentedFailures(path string) (map[string]bool, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	_, after, ok := strings.Cut(string(b), "\n## Limitations\n")
	if !ok {
		return nil, fmt.Errorf("%s: no \"## Limitations\" section", path)
	}
	if next := strings.Index(after, "\n## "); next >= 0 {
		after = after[:next]
	}
	out := map[string]bool{}
	for _, l := range strings.Split(after, "\n") {
		if !strings.HasPrefix(l, "| `") {
			continue
		}
		name, _, _ := strings.Cut(strings.TrimPrefix(l, "| `"), "`")
		if _, ok := posixtest.All[name]; !ok {
			return nil, fmt.Errorf("%s lists %q, which is no posixtest case", path, name)
		}
		out[name] = true
	}
	return out, nil
}

package testserver

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// searchDirs lists where server binaries may have been installed.
func searchDirs() []string {
	var dirs []string
	if d := os.Getenv("BASIN_TOOLS_DIR"); d != "" {
		dirs = append(dirs, filepath.Join(d, "bin"))
	}
	if home, err := os.UserHomeDir(); err == nil {
		dirs = append(dirs, filepath.Join(home, ".cache", "basin-tools", "bin"))
	}
	if d := os.Getenv("GOBIN"); d != "" {
		dirs = append(dirs, d)
	}
	gopath := os.Getenv("GOPATH")
	if gopath == "" {
		if home, err := os.UserHomeDir(); err == nil {
			gopath = filepath.Join(home, "go")
		}
	}
	if gopath != "" {
		dirs = append(dirs, filepath.Join(filepath.SplitList(gopath)[0], "bin"))
	}
	return dirs
}

// FindBinary returns the path of the named binary, or "" if none is found.
func FindBinary(name string) string {
	for _, d := range searchDirs() {
		p := filepath.Join(d, name)
		if st, err := os.Stat(p); err == nil && !st.IsDir() && st.Mode()&0o111 != 0 {
			return p
		}
	}
	if p, err := exec.LookPath(name); err == nil {
		return p
	}
	return ""
}

// InCI reports whether the tests run under CI (CI=true), where a missing
// dependency is a failure instead of a skip.
func InCI() bool { return os.Getenv("CI") == "true" }

// Unavailable skips t, or fails it under CI, with the reason.
func Unavailable(t testing.TB, format string, args ...any) {
	t.Helper()
	if InCI() {
		t.Fatalf("required under CI=true: "+format, args...)
	}
	t.Skipf(format, args...)
}

// RequireBinary returns the binary's path or stops the test (see Unavailable).
func RequireBinary(t testing.TB, name, installHint string) string {
	t.Helper()
	p := FindBinary(name)
	if p == "" {
		Unavailable(t, "%s not found (install: %s)", name, installHint)
	}
	return p
}

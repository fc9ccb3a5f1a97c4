package testserver

import (
	"os"
	"testing"
)

// RequireRoot stops the test unless it runs as root (see Unavailable);
// why says what needs root, e.g. "mounting a tmpfs".
func RequireRoot(t testing.TB, why string) {
	t.Helper()
	if os.Geteuid() != 0 {
		Unavailable(t, "%s needs root", why)
	}
}

// RequireFUSE stops the test unless it can mount FUSE file systems: root
// and /dev/fuse (see Unavailable).
func RequireFUSE(t testing.TB) {
	t.Helper()
	RequireRoot(t, "mounting FUSE")
	if _, err := os.Stat("/dev/fuse"); err != nil {
		Unavailable(t, "no /dev/fuse: %v", err)
	}
}

// OptIn skips the test unless the environment variable env is set: for
// tests that only their own make target runs (make chaos sets
// BASIN_CHAOS), never a missing dependency. It returns env's value.
func OptIn(t testing.TB, env, target string) string {
	t.Helper()
	v := os.Getenv(env)
	if v == "" {
		t.Skipf("set %s=1 (%s) to run this test", env, target)
	}
	return v
}

// SkipShort skips the test under go test -short, saying what it costs.
// Neither `make test` nor CI passes -short.
func SkipShort(t testing.TB, cost string) {
	t.Helper()
	if testing.Short() {
		t.Skipf("-short: %s", cost)
	}
}

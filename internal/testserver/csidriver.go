package testserver

import (
	"os"
	"os/exec"
	"path/filepath"
	"sync"
)

// CSIDriver builds cmd/csi-driver once per test binary (into a temporary
// directory, which Shutdown removes) and returns its path: the node plugin
// runs it as `mount`.
var CSIDriver = sync.OnceValues(func() (string, error) {
	dir, err := os.MkdirTemp("", "basin-bin-")
	if err != nil {
		return "", err
	}
	builtMu.Lock()
	builtDirs = append(builtDirs, dir)
	builtMu.Unlock()
	out := filepath.Join(dir, "csi-driver")
	cmd := exec.Command("go", "build", "-o", out, "github.com/basin-csi/basin/cmd/csi-driver")
	cmd.Stderr = os.Stderr
	return out, cmd.Run()
})

// The directories CSIDriver built into, removed by Shutdown (a build is
// 120 MB: left behind by every test binary, they fill a developer's disk).
var (
	builtMu   sync.Mutex
	builtDirs []string
)

// removeBuilt removes what CSIDriver built.
func removeBuilt() {
	builtMu.Lock()
	defer builtMu.Unlock()
	for _, d := range builtDirs {
		_ = os.RemoveAll(d)
	}
	builtDirs = nil
}

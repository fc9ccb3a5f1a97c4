package testserver

import (
	"os"
	"os/exec"
	"path/filepath"
	"sync"
)

// CSIDriver builds cmd/csi-driver once per test binary (into a temporary
// directory) and returns its path: the node plugin runs it as `mount`.
var CSIDriver = sync.OnceValues(func() (string, error) {
	dir, err := os.MkdirTemp("", "basin-bin-")
	if err != nil {
		return "", err
	}
	out := filepath.Join(dir, "csi-driver")
	cmd := exec.Command("go", "build", "-o", out, "github.com/basin-csi/basin/cmd/csi-driver")
	cmd.Stderr = os.Stderr
	return out, cmd.Run()
})

package mountspec

import (
	"fmt"

	"github.com/basin-csi/basin/internal/mountdefaults"
)

// OpenMode says who opens a mount's regular files (internal/mountdefaults).
type OpenMode = mountdefaults.OpenMode

// The open modes.
const (
	OpenServer = mountdefaults.OpenServer
	OpenKernel = mountdefaults.OpenKernel
)

// OpenModes returns the accepted open modes, the default first.
func OpenModes() []OpenMode { return mountdefaults.OpenModes() }

// CheckOpenMode accepts m ("" stands for the default) on a mount that is
// read-only or not. The message names the openMode attribute.
func CheckOpenMode(m OpenMode, readOnly bool) error {
	switch {
	case m != "" && !m.Valid():
		return fmt.Errorf("openMode %q: want one of %q", m, OpenModes())
	case m == OpenKernel && !readOnly:
		return fmt.Errorf("openMode %q needs a read-only mount (readOnly: \"true\", the mount option ro, or a ReadOnlyMany volume); use %q", m, OpenServer)
	}
	return nil
}

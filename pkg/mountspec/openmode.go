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

// CheckOpenMode refuses OpenKernel on a mount that is not read-only (the
// openMode setting's own check says which modes there are). The message
// names the openMode attribute.
func CheckOpenMode(m OpenMode, readOnly bool) error {
	if m == OpenKernel && !readOnly {
		return fmt.Errorf("%s %q needs a read-only mount (readOnly: \"true\", the mount option ro, or a ReadOnlyMany volume); use %q", KeyOpenMode, m, OpenServer)
	}
	return nil
}

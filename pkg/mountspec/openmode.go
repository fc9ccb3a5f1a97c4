package mountspec

import (
	"fmt"

	"github.com/basin-csi/basin/internal/mountdefaults"
)

// CheckOpenMode refuses mountdefaults.OpenKernel on a mount that is not
// read-only (the openMode setting's own check says which modes there
// are). The message names the openMode attribute.
func CheckOpenMode(m mountdefaults.OpenMode, readOnly bool) error {
	if m == mountdefaults.OpenKernel && !readOnly {
		return fmt.Errorf("%s %q needs a read-only mount (readOnly: \"true\", the mount option ro, or a ReadOnlyMany volume); use %q", KeyOpenMode, m, mountdefaults.OpenServer)
	}
	return nil
}

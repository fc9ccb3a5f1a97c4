// Package owned checks that a private file or directory is what its
// reader expects before it trusts it: exactly the given mode and owned by
// the calling user (hand-off and credentials files, their directories).
package owned

import (
	"errors"
	"fmt"
	"os"
	"syscall"
)

// Check reports why st is not of exactly mode (type and permission bits)
// and owned by the calling user; nil when it is.
func Check(st os.FileInfo, mode os.FileMode) error {
	if st.Mode() != mode {
		return fmt.Errorf("mode %v, want %v", st.Mode(), mode)
	}
	sys, ok := st.Sys().(*syscall.Stat_t)
	if !ok {
		return errors.New("no owner information")
	}
	if int(sys.Uid) != os.Geteuid() {
		return fmt.Errorf("owned by uid %d, not %d", sys.Uid, os.Geteuid())
	}
	return nil
}

// Package fusectl aborts FUSE connections through the kernel's FUSE
// control file system (/sys/fs/fuse/connections/N/abort), as an
// administrator would: the connection's mounts then answer ENOTCONN until
// they are mounted again. Tests use it to break a mount for real; it needs
// root.
package fusectl

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"

	"golang.org/x/sys/unix"
)

// Dir is where the control file system lists each connection.
const Dir = "/sys/fs/fuse/connections"

// Abort aborts the FUSE connection of device dev (a mount's st_dev, or
// its device number in the mount table). When the control file system is
// not mounted on Dir, Abort mounts it for the write and unmounts it again,
// so it leaves the machine's mount table as it found it.
func Abort(dev uint64) error {
	conn := filepath.Join(Dir, strconv.FormatUint(uint64(unix.Minor(dev)), 10))
	if _, err := os.Stat(conn); errors.Is(err, os.ErrNotExist) {
		switch err := unix.Mount("fusectl", Dir, "fusectl", 0, ""); {
		case err == nil:
			defer func() { _ = unix.Unmount(Dir, 0) }()
		case !errors.Is(err, unix.EBUSY): // EBUSY: mounted meanwhile
			return fmt.Errorf("fusectl: mount the FUSE control file system on %s: %w", Dir, err)
		}
	}
	if err := os.WriteFile(filepath.Join(conn, "abort"), []byte("1"), 0); err != nil {
		return fmt.Errorf("fusectl: abort connection %d: %w", unix.Minor(dev), err)
	}
	return nil
}

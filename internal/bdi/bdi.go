// Package bdi tunes the kernel's backing device info of a FUSE mount.
//
// The kernel offers a FUSE server at most its default read-ahead (128 KiB)
// in INIT and sets the mount's read-ahead to what the server accepts, so
// without tuning a sequential reader's FUSE reads are 128 KiB each even
// when max_read allows 1 MiB. Raising read_ahead_kb after INIT (what
// root may do for any block device) makes the kernel read ahead in 1 MiB
// requests, several in flight.
package bdi

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strconv"

	"golang.org/x/sys/unix"
)

// DefaultReadAhead is the read-ahead Basin sets on its mounts.
const DefaultReadAhead = 4 << 20

// sysfs is where the kernel lists backing devices.
const sysfs = "/sys/class/bdi"

// SetReadAhead sets the read-ahead of the backing device dev (a mount's
// st_dev) to bytes. It must run after the FUSE server answered INIT,
// which resets it.
func SetReadAhead(dev uint64, bytes int64) error {
	return setReadAhead(sysfs, dev, bytes)
}

func setReadAhead(root string, dev uint64, bytes int64) error {
	if bytes <= 0 {
		return fmt.Errorf("bdi: read-ahead %d must be positive", bytes)
	}
	if err := os.WriteFile(raPath(root, dev), []byte(strconv.FormatInt((bytes+1023)/1024, 10)), 0); err != nil {
		return fmt.Errorf("bdi: set read-ahead: %w", err)
	}
	return nil
}

// ReadAhead returns the read-ahead of dev in bytes.
func ReadAhead(dev uint64) (int64, error) {
	return readAhead(sysfs, dev)
}

func readAhead(root string, dev uint64) (int64, error) {
	b, err := os.ReadFile(raPath(root, dev))
	if err != nil {
		return 0, fmt.Errorf("bdi: read-ahead: %w", err)
	}
	kb, err := strconv.ParseInt(string(bytes.TrimSpace(b)), 10, 64)
	if err != nil {
		return 0, fmt.Errorf("bdi: read-ahead %q: %w", b, err)
	}
	return kb << 10, nil
}

// raPath is the read-ahead file of dev under root.
func raPath(root string, dev uint64) string {
	return filepath.Join(root, fmt.Sprintf("%d:%d", unix.Major(dev), unix.Minor(dev)), "read_ahead_kb")
}

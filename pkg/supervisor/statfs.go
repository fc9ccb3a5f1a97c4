package supervisor

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strings"

	"golang.org/x/sys/unix"
	"k8s.io/klog/v2"
	mountutils "k8s.io/mount-utils"

	"github.com/basin-csi/basin/pkg/fdholder"
)

// Prober runs statfs on a FUSE mount in another process: the descriptor
// holder (*fdholder.Client).
//
// Why. The kernel waits without end, and without letting the caller die,
// for a FUSE request that the server read and never answered. A node
// plugin whose check was read by a FUSE process killed together with it
// (a container restart kills both) would never exit, so the next node
// plugin, which starts the successor that answers, would never start: the
// node's volumes hang until someone aborts the connection by hand. The
// holder outlives node plugin restarts; a statfs stuck there is answered
// when the successor takes the connection over.
type Prober interface {
	// Statfs returns the figures of the mount of device dev whose root
	// root is (an O_PATH descriptor). The file system's errors wrap
	// fdholder.ErrFileSystem and the unix.Errno; one that did not answer
	// in time wraps fdholder.ErrPending.
	Statfs(ctx context.Context, dev uint64, root *os.File) (unix.Statfs_t, error)
}

// KernelFor returns the real Kernel, asking FUSE mounts through h when it
// can (a Holder that is a Prober, as *fdholder.Client is).
func KernelFor(h Holder) *LinuxKernel {
	p, _ := h.(Prober)
	return NewLinuxKernel(p)
}

// Statfs implements Kernel. A path in a FUSE mount is asked through the
// Prober, at its mount's root; this process asks itself only without a
// Prober, when no holder listens or the holder is too old, and for a path
// in no FUSE mount (it reaches no FUSE server).
func (k *LinuxKernel) Statfs(ctx context.Context, path string) (unix.Statfs_t, error) {
	var infos []mountutils.MountInfo
	if k.prober != nil {
		var err error
		if infos, err = readMountTable(); err != nil {
			return unix.Statfs_t{}, err
		}
	}
	return k.statfsIn(ctx, infos, path)
}

// statfsIn is Statfs with the mount table already read (infos; unused
// without a Prober).
func (k *LinuxKernel) statfsIn(ctx context.Context, infos []mountutils.MountInfo, path string) (unix.Statfs_t, error) {
	if k.prober != nil {
		// The figures are the file system's, so a path below a mount
		// point (a shared volume's directory) asks its mount's root.
		if mi, ok := findContainingMount(infos, path); ok && strings.HasPrefix(mi.FsType, "fuse") {
			st, err := k.probe(ctx, mi.MountPoint, unix.Mkdev(uint32(mi.Major), uint32(mi.Minor)))
			if !errors.Is(err, errAskHere) {
				return st, err
			}
		}
	}
	var st unix.Statfs_t
	err := within(ctx, "statfs "+path, func() error {
		var s unix.Statfs_t
		if err := unix.Statfs(path, &s); err != nil {
			return &fs.PathError{Op: "statfs", Path: path, Err: err}
		}
		st = s // read below only when the call returned in time
		return nil
	})
	if err != nil {
		return unix.Statfs_t{}, statfsError(err)
	}
	return st, nil
}

// errAskHere: the Prober could not run the call; this process runs it.
var errAskHere = errors.New("supervisor: ask the mount from this process")

// probe asks the Prober for the statfs of the mount of device dev on
// path.
func (k *LinuxKernel) probe(ctx context.Context, path string, dev uint64) (unix.Statfs_t, error) {
	// Resolving a mount point sends the FUSE server nothing (the last
	// name is the parent file system's, and O_PATH opens nothing); the
	// bound is for safety.
	var root *os.File
	err := within(ctx, "open "+path, func() error {
		fd, err := unix.Open(path, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
		if err != nil {
			return &fs.PathError{Op: "open", Path: path, Err: err}
		}
		root = os.NewFile(uintptr(fd), path)
		return nil
	})
	if err != nil {
		return unix.Statfs_t{}, statfsError(err)
	}
	defer func() { _ = root.Close() }()
	st, err := k.prober.Statfs(ctx, dev, root)
	var errno unix.Errno
	switch {
	case err == nil:
		return st, nil
	case errors.Is(err, fdholder.ErrFileSystem) && errors.As(err, &errno):
		return unix.Statfs_t{}, statfsError(&fs.PathError{Op: "statfs", Path: path, Err: errno})
	case errors.Is(err, fdholder.ErrUnavailable), errors.Is(err, fdholder.ErrUnsupported):
		// No holder, or one of an earlier version.
		klog.V(2).InfoS("no descriptor holder runs statfs; asking from the node plugin", "path", path, "err", err)
		return unix.Statfs_t{}, errAskHere
	}
	// Pending, a late answer, a holder that hung up mid-call: the mount
	// may be what does not answer, so this process does not ask it.
	return unix.Statfs_t{}, fmt.Errorf("statfs %s: %w (%w)", path, ErrTimeout, err)
}

// statfsError classifies a failed statfs: a corrupted mount is ErrBroken.
func statfsError(err error) error {
	if mountutils.IsCorruptedMnt(err) {
		return fmt.Errorf("%w: %w", ErrBroken, err)
	}
	return err
}

package supervisor

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"golang.org/x/sys/unix"
	mountutils "k8s.io/mount-utils"

	"github.com/basin-csi/basin/internal/bdi"
	"github.com/basin-csi/basin/pkg/mountspec"
)

// Kernel is the mount side of the supervisor. Every method that may touch
// a FUSE mount returns when ctx ends, even if the mount does not answer.
type Kernel interface {
	// MountFUSE opens /dev/fuse and mounts it on target (an existing
	// directory) with flags (and always nosuid, nodev); the returned
	// descriptor serves the mount. fsName shows in /proc/mounts.
	MountFUSE(ctx context.Context, target, fsName string, flags mountspec.Flags) (*os.File, error)
	// Unmount unmounts target, lazily (MNT_DETACH) when it is busy or
	// broken. Nothing mounted there is success.
	Unmount(ctx context.Context, target string) error
	// Check reports whether target is a mount that answers: nil, or an
	// error wrapping ErrBroken, ErrTimeout or ErrNotMounted. On a fresh
	// FUSE mount it waits until the FUSE process answered INIT.
	Check(ctx context.Context, target string) error
	// Bind bind-mounts source on target (read-only if asked), replacing
	// whatever is mounted on target. The bind keeps the source's
	// per-mount flags (noexec, noatime) and is always nosuid and nodev.
	Bind(ctx context.Context, source, target string, readOnly bool) error
	// Statfs reports the file system of path.
	Statfs(ctx context.Context, path string) (unix.Statfs_t, error)
	// MountDev returns the device number of the mount on target (its
	// FUSE connection), read from the mount table without asking the
	// file system; ErrNotMounted when target is no mount point.
	MountDev(ctx context.Context, target string) (uint64, error)
	// SetReadAhead sets the kernel read-ahead of the mount of device dev
	// (after its FUSE server answered INIT, which resets it).
	SetReadAhead(dev uint64, bytes int64) error
}

// FUSE mount parameters (see the kernel's Documentation/filesystems/fuse).
const (
	fuseDevice  = "/dev/fuse"
	fuseType    = "fuse.basin"
	fuseMaxRead = 1 << 20
)

// LinuxKernel implements Kernel with mount(2) and umount(2) alone: it runs
// no mount(8) or umount(8), so the image needs no util-linux. It reads the
// mount table to tell what is mounted, and asks a FUSE mount anything
// (statfs) only through its Prober when it has one (statfs.go).
type LinuxKernel struct {
	// constant
	prober Prober // nil: this process asks
}

var _ Kernel = (*LinuxKernel)(nil)

// NewLinuxKernel returns the real Kernel; p, when not nil, runs its
// statfs calls on FUSE mounts in another process (statfs.go).
func NewLinuxKernel(p Prober) *LinuxKernel {
	return &LinuxKernel{prober: p}
}

// MountFUSE implements Kernel.
func (k *LinuxKernel) MountFUSE(ctx context.Context, target, fsName string, mf mountspec.Flags) (*os.File, error) {
	dev, err := os.OpenFile(fuseDevice, os.O_RDWR, 0) // O_CLOEXEC: only the child we hand it to gets it
	if err != nil {
		return nil, fmt.Errorf("supervisor: open %s: %w", fuseDevice, err)
	}
	data := fmt.Sprintf("fd=%d,rootmode=40000,user_id=%d,group_id=%d,allow_other,default_permissions,max_read=%d",
		dev.Fd(), os.Geteuid(), os.Getegid(), fuseMaxRead)
	flags := uintptr(unix.MS_NOSUID | unix.MS_NODEV)
	if mf.ReadOnly {
		flags |= unix.MS_RDONLY
	}
	if mf.NoExec {
		flags |= unix.MS_NOEXEC
	}
	if mf.NoAtime {
		flags |= unix.MS_NOATIME
	}
	// The target is a plain directory (stale mounts were removed first),
	// so mount(2) never waits for a FUSE server; the bound is for safety.
	err = within(ctx, "mount "+target, func() error {
		return unix.Mount(strings.ReplaceAll(fsName, ",", "_"), target, fuseType, flags, data)
	})
	if err != nil {
		_ = dev.Close()
		return nil, fmt.Errorf("supervisor: mount FUSE on %s: %w", target, err)
	}
	return dev, nil
}

// Unmount implements Kernel.
func (k *LinuxKernel) Unmount(ctx context.Context, target string) error {
	err := within(ctx, "unmount "+target, func() error { return unix.Unmount(target, 0) })
	switch {
	case err == nil:
		return nil
	case errors.Is(err, unix.EINVAL), errors.Is(err, fs.ErrNotExist):
		return nil // not a mount point, or gone
	}
	// Busy, broken or not answering: detach it now, the kernel frees it
	// when its last user goes away.
	if lerr := unix.Unmount(target, unix.MNT_DETACH); lerr != nil && !errors.Is(lerr, unix.EINVAL) && !errors.Is(lerr, fs.ErrNotExist) {
		return fmt.Errorf("supervisor: unmount %s: %w (lazy: %w)", target, err, lerr)
	}
	return nil
}

// Check implements Kernel: target's entry in the mount table, then a
// statfs of it under ctx. A stat could be answered from the kernel's
// attribute cache; statfs always reaches the FUSE server, so a hung or not
// yet serving process cannot pass.
func (k *LinuxKernel) Check(ctx context.Context, target string) error {
	infos, err := readMountTable()
	if err != nil {
		return err
	}
	if _, err := findLastMount(infos, target); err != nil {
		return err
	}
	_, err = k.statfsIn(ctx, infos, target)
	switch {
	case err == nil, errors.Is(err, ErrTimeout), errors.Is(err, ErrBroken):
		return err
	case errors.Is(err, fs.ErrNotExist):
		return fmt.Errorf("%w: %s does not exist", ErrNotMounted, target)
	}
	return fmt.Errorf("supervisor: check %s: %w", target, err)
}

// Bind implements Kernel.
func (k *LinuxKernel) Bind(ctx context.Context, source, target string, readOnly bool) error {
	if err := k.Unmount(ctx, target); err != nil {
		return err
	}
	// mount(2) resolves the source path, which asks the FUSE process. A
	// read-only bind takes a second call: MS_RDONLY is ignored on the
	// first, so the new bind is remounted read-only (as mount(8) does).
	// The remount sets every per-mount flag anew: the ones the bind
	// inherited (noexec, noatime) are named again, nosuid and nodev always.
	err := within(ctx, "bind "+target, func() error {
		if err := unix.Mount(source, target, "", unix.MS_BIND, ""); err != nil {
			return err
		}
		if !readOnly {
			return nil
		}
		// The new bind carries the per-mount flags of the mount its
		// source lies in (the source may be a directory below a mount
		// point); an unreadable mount table fails.
		mi, err := lastMount(target)
		if err != nil {
			_ = unix.Unmount(target, unix.MNT_DETACH)
			return err
		}
		flags := unix.MS_BIND | unix.MS_REMOUNT | unix.MS_RDONLY | perMountFlags(mi.MountOptions)
		if err := unix.Mount("", target, "", flags, ""); err != nil {
			_ = unix.Unmount(target, unix.MNT_DETACH)
			return fmt.Errorf("remount read-only: %w", err)
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("supervisor: bind %s on %s: %w", source, target, err)
	}
	return nil
}

// perMountFlags returns the per-mount flags in opts (a mount's options in
// mountinfo) that a remount must repeat to keep them. It always includes
// nosuid and nodev, which every Basin mount has (see MountFUSE): a
// security flag is never dropped because it was not found.
func perMountFlags(opts []string) uintptr {
	bits := map[string]uintptr{
		"noexec": unix.MS_NOEXEC, "noatime": unix.MS_NOATIME, "nodiratime": unix.MS_NODIRATIME,
	}
	flags := uintptr(unix.MS_NOSUID | unix.MS_NODEV)
	for _, o := range opts {
		flags |= bits[o]
	}
	return flags
}

// lastMount returns the visible mount on path (the last one in
// /proc/self/mountinfo), or an error wrapping ErrNotMounted when path is
// no mount point.
func lastMount(path string) (mountutils.MountInfo, error) {
	infos, err := readMountTable()
	if err != nil {
		return mountutils.MountInfo{}, err
	}
	return findLastMount(infos, path)
}

// readMountTable parses /proc/self/mountinfo.
func readMountTable() ([]mountutils.MountInfo, error) {
	infos, err := mountutils.ParseMountInfo("/proc/self/mountinfo")
	if err != nil {
		return nil, fmt.Errorf("supervisor: read the mount table: %w", err)
	}
	return infos, nil
}

// findLastMount is lastMount on a parsed mount table.
func findLastMount(infos []mountutils.MountInfo, path string) (mountutils.MountInfo, error) {
	path = filepath.Clean(path)
	for i := len(infos) - 1; i >= 0; i-- {
		if infos[i].MountPoint == path {
			return infos[i], nil
		}
	}
	return mountutils.MountInfo{}, fmt.Errorf("%w: %s", ErrNotMounted, path)
}

// findContainingMount returns the visible mount that path lies in: the
// last entry whose mount point is path or its nearest ancestor.
func findContainingMount(infos []mountutils.MountInfo, path string) (mountutils.MountInfo, bool) {
	path = filepath.Clean(path)
	best := -1
	for i, mi := range infos {
		mp := mi.MountPoint
		inside := path == mp || mp == "/" || strings.HasPrefix(path, mp+"/")
		if inside && (best < 0 || len(mp) >= len(infos[best].MountPoint)) {
			best = i
		}
	}
	if best < 0 {
		return mountutils.MountInfo{}, false
	}
	return infos[best], true
}

// MountDev implements Kernel: the last mount on target in
// /proc/self/mountinfo.
func (k *LinuxKernel) MountDev(_ context.Context, target string) (uint64, error) {
	mi, err := lastMount(target)
	if err != nil {
		return 0, err
	}
	return unix.Mkdev(uint32(mi.Major), uint32(mi.Minor)), nil
}

// SetReadAhead implements Kernel.
func (k *LinuxKernel) SetReadAhead(dev uint64, bytes int64) error {
	return bdi.SetReadAhead(dev, bytes)
}

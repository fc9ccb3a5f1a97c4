package fuse

import (
	"context"
	"errors"
	"fmt"
	"log"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/hanwen/go-fuse/v2/fs"
	gofuse "github.com/hanwen/go-fuse/v2/fuse"
	"golang.org/x/sys/unix"
	"k8s.io/klog/v2"

	"github.com/basin-csi/basin/internal/bdi"
)

// Mount tuning.
const (
	maxRequest    = 1 << 20 // max_read / MaxWrite / max pages
	maxBackground = 64      // concurrent async requests (readahead, writes)
)

// ErrAlreadyMounted is returned by a second Mount of the same FS.
var ErrAlreadyMounted = errors.New("fuse: file system already mounted")

// Mounted is a served mount.
type Mounted struct {
	// constant
	server     *gofuse.Server
	mountpoint string
	fdMode     bool

	done      chan struct{} // closed when the serve loop ends
	unmountMu sync.Mutex    // serialises Unmount
}

// IsFD reports whether mountpoint is the "/dev/fd/N" form: an already
// mounted /dev/fuse descriptor inherited from the caller.
func IsFD(mountpoint string) bool {
	n, ok := strings.CutPrefix(mountpoint, "/dev/fd/")
	if !ok {
		return false
	}
	fd, err := strconv.Atoi(n)
	return err == nil && fd > 0
}

// Mount attaches the file system to mountpoint and serves it in the
// background until Unmount or until the kernel ends the connection.
// mountpoint may be "/dev/fd/N": a /dev/fuse descriptor on which the caller
// already called mount(2) (the CSI node plugin's way); it is served as is
// and never unmounted by this process; the process serving it must not
// open files on the mount itself (go-fuse's poll hack needs a path, and the
// Go runtime's epoll_ctl on a FUSE file would wait for this very server).
// ctx bounds the mount itself.
func (f *FS) Mount(ctx context.Context, mountpoint string, opts MountOptions) (*Mounted, error) {
	f.mountMu.Lock()
	mounted := f.mounted
	f.mounted = true
	f.mountMu.Unlock()
	if mounted {
		return nil, ErrAlreadyMounted
	}
	fdMode := IsFD(mountpoint)
	entry := kernelTimeout(f.cfg.MetadataTTL)
	negative := kernelTimeout(f.cfg.NegativeMetadataTTL)
	name := opts.FsName
	if name == "" {
		name = "basin"
	}
	mo := gofuse.MountOptions{
		AllowOther:           opts.AllowOther,
		Options:              []string{"default_permissions"},
		MaxWrite:             maxRequest,
		MaxReadAhead:         maxRequest,
		MaxBackground:        maxBackground,
		FsName:               name,
		Name:                 "basin",
		DisableXAttrs:        true,
		IgnoreSecurityLabels: true,
		Debug:                opts.Debug,
		// DIRECT_IO_ALLOW_MMAP: mmap keeps working on direct I/O opens.
		// The capabilities are part of the INIT reply a successor must
		// reproduce byte for byte (pkg/fuse/takeover): changing them makes
		// takeovers from earlier releases fall back to a remount.
		ExtraCapabilities: gofuse.CAP_ATOMIC_O_TRUNC | gofuse.CAP_DIRECT_IO_ALLOW_MMAP,
	}
	if f.cfg.ReadOnly {
		mo.Options = append(mo.Options, "ro")
	}
	if !fdMode {
		setMountFlags(&mo, opts)
	}
	// go-fuse's own warnings (e.g. a splice fallback, once per read of
	// a resumed session) go to klog at -v=2; every request with Debug.
	mo.Logger = log.New(klogWriter{level: 2}, "", 0)
	if opts.Debug {
		mo.Logger = log.New(klogWriter{}, "", 0)
	}
	fo := &fs.Options{
		MountOptions:    mo,
		EntryTimeout:    &entry,
		AttrTimeout:     &entry,
		NegativeTimeout: &negative,
		UID:             uint32(f.cfg.UID),
		GID:             uint32(f.cfg.GID),
		RootStableAttr:  &fs.StableAttr{Ino: gofuse.FUSE_ROOT_ID},
		// Node IDs are the cache's persistent inode numbers, so that a
		// successor process can serve them (revive.go).
		ExternalNodeID: true,
	}
	// Before the staged writes are scanned, and before any writer of
	// this process exists (orphans.go).
	f.abortPredecessorUploads(ctx, f.predecessorKeys())
	inherited := readClaimNotes(f.writes.dir, time.Now())
	server, err := f.newServer(ignoreInterrupts{fs.NewNodeFS(f.root, fo)}, mountpoint, fdMode, &fo.MountOptions, opts.Session)
	if err != nil && fo.DirectMountStrict {
		return nil, fmt.Errorf("mount %s with noatime (needs mount(2): root or CAP_SYS_ADMIN; fusermount cannot set it): %w", mountpoint, err)
	}
	if err != nil {
		return nil, fmt.Errorf("mount %s: %w", mountpoint, err)
	}
	f.carryClaims(inherited) // after the staged-writes scan removed the predecessor's notes
	f.mountMu.Lock()
	f.server = server
	f.mountMu.Unlock()
	m := &Mounted{server: server, mountpoint: mountpoint, fdMode: fdMode, done: make(chan struct{})}
	go func() {
		server.Serve()
		f.inodeReads.closeAll() // no RELEASE comes for them
		f.claims.dropAll()      // unmounted: no CREATE is resent to a successor
		f.uploads.drain(uploadDrainTimeout)
		close(m.done)
	}()
	go f.sweepUploads(m.done)
	waited := make(chan error, 1)
	go func() { waited <- server.WaitMount() }()
	select {
	case err := <-waited:
		if err != nil {
			_ = m.Unmount()
			return nil, fmt.Errorf("mount %s: %w", mountpoint, err)
		}
	case <-ctx.Done():
		// Let WaitMount finish first: go-fuse's Unmount must not run
		// concurrently with it.
		select {
		case err := <-waited:
			// Abandoned either way: Unmount below undoes a mount that
			// succeeded.
			klog.V(2).InfoS("mount finished after its context ended", "volume", f.cfg.VolumeID, "err", err)
		case <-time.After(30 * time.Second):
		}
		_ = m.Unmount()
		return nil, fmt.Errorf("mount %s: %w", mountpoint, ctx.Err())
	}
	if !fdMode {
		// In fd mode the node plugin, which knows the mount, sets it.
		setReadAhead(ctx, mountpoint, f.cfg.VolumeID)
	}
	klog.InfoS("mounted", "volume", f.cfg.VolumeID, "mountpoint", mountpoint, "readOnly", f.cfg.ReadOnly,
		"metadataTTL", f.cfg.MetadataTTL, "negativeTTL", f.cfg.NegativeMetadataTTL)
	return m, nil
}

// Done is closed when the mount stopped being served (unmounted by anyone).
func (m *Mounted) Done() <-chan struct{} { return m.done }

// Unmount detaches the mount and waits for the serve loop to end, and for
// the uploads after close still pending (up to uploadDrainTimeout,
// asyncupload.go). A busy mount (open files) is retried for a few seconds
// and then lazily detached.
// In fd mode the caller owns the mount; Unmount returns at once.
func (m *Mounted) Unmount() error {
	m.unmountMu.Lock()
	defer m.unmountMu.Unlock()
	if m.fdMode {
		return nil
	}
	select {
	case <-m.done:
		return nil
	default:
	}
	err := m.server.Unmount()
	if err != nil {
		klog.InfoS("unmount failed, detaching lazily", "mountpoint", m.mountpoint, "err", err)
		if lerr := syscall.Unmount(m.mountpoint, syscall.MNT_DETACH); lerr != nil {
			return fmt.Errorf("unmount %s: %w (lazy: %w)", m.mountpoint, err, lerr)
		}
		err = nil
	}
	select {
	case <-m.done:
	case <-time.After(10*time.Second + uploadDrainTimeout):
		return fmt.Errorf("unmount %s: serve loop did not end", m.mountpoint)
	}
	return err
}

// Serve mounts, serves until ctx is cancelled or the mount goes away, then
// unmounts.
func (f *FS) Serve(ctx context.Context, mountpoint string, opts MountOptions) error {
	m, err := f.Mount(ctx, mountpoint, opts)
	if err != nil {
		return err
	}
	select {
	case <-ctx.Done():
		return m.Unmount()
	case <-m.Done():
		return nil
	}
}

// klogWriter sends go-fuse's log to klog at a verbosity level.
type klogWriter struct{ level klog.Level }

func (w klogWriter) Write(p []byte) (int, error) {
	if klog.V(w.level).Enabled() {
		klog.InfoDepth(1, strings.TrimRight(string(p), "\n"))
	}
	return len(p), nil
}

// setReadAhead raises the kernel read-ahead of the mount on mountpoint
// (our own, answering) from the 128 KiB INIT leaves it at.
func setReadAhead(ctx context.Context, mountpoint, volumeID string) {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	done := make(chan error, 1)
	go func() {
		var st unix.Stat_t
		if err := unix.Stat(mountpoint, &st); err != nil {
			done <- err
			return
		}
		done <- bdi.SetReadAhead(st.Dev, bdi.DefaultReadAhead)
	}()
	var err error
	select {
	case err = <-done:
	case <-ctx.Done():
		err = ctx.Err()
	}
	if err != nil {
		klog.ErrorS(err, "setting the mount's read-ahead; sequential reads go in 128 KiB requests", "volume", volumeID)
	}
}

// setMountFlags sets how a standalone mount (not fd mode, where the
// caller's mount(2) set the flags) gets nosuid, nodev, noexec and noatime.
// go-fuse mounts directly with mount(2) when it may (as root), passing
// DirectMountFlags; otherwise it falls back to fusermount, which ignores
// DirectMountFlags but reads the option strings (and always sets nosuid
// and nodev). go-fuse turns "noexec" into a flag for a direct mount, so it
// is named both ways. "noatime" it passes on as a string, which mount(2)
// rejects, so a noatime mount must be direct (DirectMountStrict) and fails
// rather than silently losing the flag when it cannot be.
func setMountFlags(mo *gofuse.MountOptions, opts MountOptions) {
	mo.DirectMount = true
	mo.DirectMountFlags = unix.MS_NOSUID | unix.MS_NODEV
	if opts.NoExec {
		mo.Options = append(mo.Options, "noexec")
		mo.DirectMountFlags |= unix.MS_NOEXEC
	}
	if opts.NoAtime {
		mo.DirectMountFlags |= unix.MS_NOATIME
		mo.DirectMountStrict = true
	}
}

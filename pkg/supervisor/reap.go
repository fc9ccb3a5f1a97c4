package supervisor

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"k8s.io/klog/v2"
)

// Reaper stops FUSE processes an earlier node plugin left serving a
// volume's cache directory: two processes must never share a cache (the
// second would wait for the first's database lock). nil skips reaping.
type Reaper func(ctx context.Context, volumeID, cacheDir string) error

// ReapProcs is the Reaper of a real node: it finds, in /proc, processes
// whose command line holds the mount subcommand and the pair
// "--cache-dir" cacheDir, kills them with SIGKILL and waits until they
// are gone.
func ReapProcs(ctx context.Context, volumeID, cacheDir string) error {
	return reap(ctx, volumeID, func(dir string) bool { return dir == cacheDir })
}

// ReapProcsUnder stops every FUSE process whose cache directory is under
// root (test cleanup, and a node's shutdown in tests).
func ReapProcsUnder(ctx context.Context, root string) error {
	root = filepath.Clean(root) + string(filepath.Separator)
	return reap(ctx, "", func(dir string) bool { return strings.HasPrefix(dir, root) })
}

// ProcsUnder lists the FUSE processes (serving or standby) whose cache
// directory is under root: what ReapProcsUnder would stop (a soak's
// fault injector and leak count).
func ProcsUnder(root string) ([]int, error) {
	root = filepath.Clean(root) + string(filepath.Separator)
	return procsServing(func(dir string) bool { return strings.HasPrefix(dir, root) })
}

// reap kills the FUSE processes whose cache directory matches and waits
// until they are gone.
func reap(ctx context.Context, volumeID string, match func(cacheDir string) bool) error {
	pids, err := procsServing(match)
	if err != nil {
		return err
	}
	for _, pid := range pids {
		if pid == os.Getpid() || pid == os.Getppid() {
			continue
		}
		klog.InfoS("stopping a FUSE process left by an earlier node plugin", "volume", volumeID, "pid", pid)
		if err := syscall.Kill(pid, syscall.SIGKILL); err != nil && !errors.Is(err, syscall.ESRCH) {
			return fmt.Errorf("supervisor: kill stale FUSE process %d: %w", pid, err)
		}
	}
	for _, pid := range pids {
		for {
			// A process we did not start cannot be waited for: poll.
			if _, err := os.Stat(filepath.Join("/proc", strconv.Itoa(pid))); errors.Is(err, fs.ErrNotExist) {
				break
			}
			if err := zombie(pid); err == nil {
				break
			}
			select {
			case <-ctx.Done():
				return fmt.Errorf("supervisor: stale FUSE process %d did not exit: %w", pid, ctx.Err())
			case <-time.After(20 * time.Millisecond):
			}
		}
	}
	return nil
}

// zombie returns nil when pid has exited and waits for its parent.
func zombie(pid int) error {
	b, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "stat"))
	if err != nil {
		return nil
	}
	if i := bytes.LastIndexByte(b, ')'); i > 0 && len(b) > i+2 && (b[i+2] == 'Z' || b[i+2] == 'X') {
		return nil
	}
	return errors.New("running")
}

// procsServing lists the processes whose argv holds "mount" and a
// "--cache-dir" that matches.
func procsServing(match func(cacheDir string) bool) ([]int, error) {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return nil, fmt.Errorf("supervisor: list processes: %w", err)
	}
	var pids []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err != nil {
			continue // exited meanwhile
		}
		if dir, ok := mountCacheDir(bytes.Split(bytes.TrimRight(b, "\x00"), []byte{0})); ok && match(dir) {
			pids = append(pids, pid)
		}
	}
	return pids, nil
}

// mountCacheDir returns DIR when argv is `... mount ... --cache-dir DIR`.
func mountCacheDir(argv [][]byte) (string, bool) {
	sub, dir, found := false, "", false
	for i, a := range argv {
		s := string(a)
		switch {
		case i > 0 && s == "mount":
			sub = true
		case s == "--cache-dir" && i+1 < len(argv):
			dir, found = string(argv[i+1]), true
		case strings.HasPrefix(s, "--cache-dir="):
			dir, found = strings.TrimPrefix(s, "--cache-dir="), true
		}
	}
	return dir, sub && found
}

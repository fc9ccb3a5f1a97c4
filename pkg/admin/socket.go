package admin

import (
	"fmt"
	"net"
	"os"
	"path/filepath"

	"github.com/basin-csi/basin/internal/unixsock"
)

// SocketName is the admin socket's name inside a volume's cache
// directory.
const SocketName = "admin.sock"

// SocketPath is the admin socket of the volume cached in cacheDir.
func SocketPath(cacheDir string) string { return filepath.Join(cacheDir, SocketName) }

// maxSocketPath is the longest path a unix socket can be bound to
// (sun_path holds 108 bytes including the terminating NUL).
const maxSocketPath = 107

// Listen binds the unix socket at path with mode 0600, replacing a stale
// socket (the caller holds the cache directory's lock, so no live process
// owns it). It refuses to replace anything that is not a socket.
func Listen(path string) (net.Listener, error) {
	if len(path) > maxSocketPath {
		return nil, fmt.Errorf("%w: socket path %s is longer than %d bytes", ErrInvalidArgument, path, maxSocketPath)
	}
	lis, err := unixsock.Listen(path)
	if err != nil {
		return nil, fmt.Errorf("admin: %w", err)
	}
	// The cache directory is 0700 already; the socket is 0600 as well so
	// that it stays private wherever it is moved or linked.
	if err := os.Chmod(path, 0o600); err != nil {
		_ = lis.Close()
		return nil, fmt.Errorf("admin: chmod socket: %w", err)
	}
	return lis, nil
}

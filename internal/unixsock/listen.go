// Package unixsock binds unix sockets the way Basin's servers need them.
package unixsock

import (
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os"
)

// Listen binds the unix stream socket at path, replacing a stale socket
// left by a process that is gone (the caller makes sure no live one serves
// it). It refuses to replace anything that is not a socket.
func Listen(path string) (net.Listener, error) {
	return ListenNetwork("unix", path)
}

// ListenNetwork is Listen for another unix network ("unixpacket").
func ListenNetwork(network, path string) (net.Listener, error) {
	switch st, err := os.Lstat(path); {
	case errors.Is(err, fs.ErrNotExist):
	case err != nil:
		return nil, err
	case st.Mode().Type() != fs.ModeSocket:
		return nil, fmt.Errorf("%s exists and is not a socket", path)
	default:
		if err := os.Remove(path); err != nil {
			return nil, fmt.Errorf("remove stale socket: %w", err)
		}
	}
	return net.Listen(network, path)
}

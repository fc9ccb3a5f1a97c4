package testserver

import (
	"errors"
	"os"
)

// Signal sends sig to the running server process, e.g. SIGSTOP and SIGCONT
// to freeze it without closing its connections.
func (s *Server) Signal(sig os.Signal) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.proc == nil {
		return errors.New("testserver: not running")
	}
	return s.proc.cmd.Process.Signal(sig)
}

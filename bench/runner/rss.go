package runner

import "github.com/basin-csi/basin/bench/sut"

// rssMark starts the measure of one phase's peak resident set: it folds
// the system's process's peak so far into the run's (System.PeakRSS), then
// resets the process's VmHWM. It returns the process's pid, 0 when there
// is none or the reset failed.
func (s *session) rssMark() int {
	pid := s.sys.PID()
	if pid <= 0 {
		return 0
	}
	s.sys.PeakRSS()
	if sut.ResetPeakRSS(pid) != nil {
		return 0
	}
	return pid
}

// peakSince is the peak resident set (bytes) of the process marked by
// rssMark; 0 when unknown, or when the system now runs another process (a
// takeover or remount during the phase).
func (s *session) peakSince(pid int) int64 {
	if pid <= 0 || s.sys.PID() != pid {
		return 0
	}
	v, err := sut.PeakRSSOf(pid)
	if err != nil {
		return 0
	}
	return v
}

package runner

import (
	"time"

	"github.com/basin-csi/basin/bench/report"
	"github.com/basin-csi/basin/bench/sut"
)

// cpuMark is the CPU time used so far by the system's process, by its
// store's server and by the whole machine; a phase's cost is the
// difference of two marks.
type cpuMark struct {
	system, store  *time.Duration
	machine, total *time.Duration
}

func (s *session) cpuMark() cpuMark {
	var m cpuMark
	m.system = processCPU(s.sys.PID())
	if s.r.hooks.StorePID != nil {
		m.store = processCPU(s.r.hooks.StorePID(s.sys.Backend()))
	}
	if t, err := sut.MachineCPU(); err == nil {
		m.machine, m.total = &t.Busy, &t.Total
	}
	return m
}

// since is the CPU time used from m until now; a side that has no
// process (or lost it) stays nil.
func (m cpuMark) since(now cpuMark) report.CPU {
	return report.CPU{System: delta(m.system, now.system), Store: delta(m.store, now.store),
		Machine: delta(m.machine, now.machine), MachineTotal: delta(m.total, now.total)}
}

func delta(before, after *time.Duration) *time.Duration {
	if before == nil || after == nil || *after < *before {
		return nil
	}
	d := *after - *before
	return &d
}

func processCPU(pid int) *time.Duration {
	if pid <= 0 {
		return nil
	}
	d, err := sut.ProcessCPU(pid)
	if err != nil {
		return nil
	}
	return &d
}

package sut

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"
)

// userHZ is the unit of the times in /proc/<pid>/stat: USER_HZ, 100 on
// every Linux architecture the benchmark runs on.
const userHZ = 100

// ProcessCPU is the CPU time (user + system) pid and its live descendants
// have used so far, with the children each of them has waited for: the
// cost of a file system that forks helpers. The resolution is 10 ms.
func ProcessCPU(pid int) (time.Duration, error) {
	if pid <= 0 {
		return 0, fmt.Errorf("sut: no process (pid %d)", pid)
	}
	root, err := readStat(pid)
	if err != nil {
		return 0, err
	}
	ticks := root.ticks
	for _, p := range descendants(pid) {
		if st, err := readStat(p); err == nil { // an exited one is in its parent's cutime
			ticks += st.ticks
		}
	}
	return time.Duration(ticks) * time.Second / userHZ, nil
}

// procStat is what ProcessCPU needs of /proc/<pid>/stat.
type procStat struct {
	ppid  int
	ticks int64 // utime + stime + cutime + cstime
}

func readStat(pid int) (procStat, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return procStat{}, err
	}
	return parseStat(string(b))
}

// parseStat reads "pid (comm) state ppid ... utime stime cutime cstime
// ..."; comm may hold spaces and parentheses, so fields are counted from
// the last ')'.
func parseStat(s string) (procStat, error) {
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return procStat{}, fmt.Errorf("sut: odd /proc stat %q", s)
	}
	f := strings.Fields(s[i+1:]) // f[0] is field 3, state
	if len(f) < 15 {
		return procStat{}, fmt.Errorf("sut: short /proc stat %q", s)
	}
	var st procStat
	var err error
	if st.ppid, err = strconv.Atoi(f[1]); err != nil {
		return procStat{}, fmt.Errorf("sut: /proc stat ppid: %w", err)
	}
	for _, v := range f[11:15] { // fields 14–17: utime stime cutime cstime
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			return procStat{}, fmt.Errorf("sut: /proc stat times: %w", err)
		}
		st.ticks += n
	}
	return st, nil
}

// descendants lists the live processes below pid.
func descendants(pid int) []int {
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	children := map[int][]int{}
	for _, e := range ents {
		p, err := strconv.Atoi(e.Name())
		if err != nil || p == pid {
			continue
		}
		if st, err := readStat(p); err == nil {
			children[st.ppid] = append(children[st.ppid], p)
		}
	}
	var out []int
	for queue := children[pid]; len(queue) > 0; queue = queue[1:] {
		out = append(out, queue[0])
		queue = append(queue, children[queue[0]]...)
	}
	return out
}

// MachineTimes is the CPU time of every core of the machine so far, from
// the "cpu" line of /proc/stat.
type MachineTimes struct {
	// Busy is user, nice, system, irq and softirq time (guests are in
	// user): every process's and the kernel's work.
	Busy time.Duration
	// Total is Busy with the idle, iowait and steal time: the cores'
	// wall-clock time.
	Total time.Duration
}

// MachineCPU reads the machine's CPU times from /proc/stat.
func MachineCPU() (MachineTimes, error) {
	b, err := os.ReadFile("/proc/stat")
	if err != nil {
		return MachineTimes{}, err
	}
	return parseMachineStat(string(b))
}

// parseMachineStat reads the first line of /proc/stat, "cpu user nice
// system idle iowait irq softirq steal ...".
func parseMachineStat(s string) (MachineTimes, error) {
	line, _, _ := strings.Cut(s, "\n")
	f := strings.Fields(line)
	if len(f) < 9 || f[0] != "cpu" {
		return MachineTimes{}, fmt.Errorf("sut: odd /proc/stat line %q", line)
	}
	var v [8]int64
	for i := range v {
		n, err := strconv.ParseInt(f[i+1], 10, 64)
		if err != nil {
			return MachineTimes{}, fmt.Errorf("sut: /proc/stat: %w", err)
		}
		v[i] = n
	}
	user, nice, system, idle, iowait, irq, softirq, steal := v[0], v[1], v[2], v[3], v[4], v[5], v[6], v[7]
	busy := user + nice + system + irq + softirq
	tick := func(n int64) time.Duration { return time.Duration(n) * time.Second / userHZ }
	return MachineTimes{Busy: tick(busy), Total: tick(busy + idle + iowait + steal)}, nil
}

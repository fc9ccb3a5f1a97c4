package sut

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// mountFSType returns the file system type mounted exactly at dir, or ""
// if dir is not a mount point, from /proc/self/mountinfo.
func mountFSType(dir string) (string, error) {
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		return "", err
	}
	defer func() { _ = f.Close() }()
	return parseMountinfo(bufio.NewScanner(f), filepath.Clean(dir))
}

// parseMountinfo scans mountinfo lines ("36 35 98:0 /mnt1 /mnt2 rw - ext3
// /dev/root rw"); the last mount at dir wins, as it hides the others.
func parseMountinfo(sc *bufio.Scanner, dir string) (string, error) {
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	fstype := ""
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) < 7 || unescapeMountPath(fields[4]) != dir {
			continue
		}
		for i := 6; i < len(fields)-1; i++ {
			if fields[i] == "-" {
				fstype = fields[i+1]
				break
			}
		}
	}
	return fstype, sc.Err()
}

// unescapeMountPath undoes the octal escapes (\040 for space) of mountinfo.
func unescapeMountPath(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+3 < len(s) {
			if v, err := strconv.ParseUint(s[i+1:i+4], 8, 8); err == nil {
				b.WriteByte(byte(v))
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// PeakRSSOf is VmHWM of pid in bytes: its peak resident set since it
// started or since ResetPeakRSS.
func PeakRSSOf(pid int) (int64, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, err
	}
	return parseVmHWM(string(b))
}

func parseVmHWM(status string) (int64, error) {
	for line := range strings.Lines(status) {
		rest, ok := strings.CutPrefix(line, "VmHWM:")
		if !ok {
			continue
		}
		f := strings.Fields(rest)
		if len(f) != 2 || f[1] != "kB" {
			return 0, fmt.Errorf("sut: odd VmHWM line %q", line)
		}
		kb, err := strconv.ParseInt(f[0], 10, 64)
		return kb << 10, err
	}
	return 0, fmt.Errorf("sut: no VmHWM in status")
}

// ResetPeakRSS sets pid's VmHWM to its current resident set (writes 5 to
// /proc/PID/clear_refs), so a later PeakRSSOf is the peak of what came
// after.
func ResetPeakRSS(pid int) error {
	return os.WriteFile("/proc/"+strconv.Itoa(pid)+"/clear_refs", []byte("5"), 0o200)
}

// Measure runs work and returns the CPU time pid (with its children)
// spent meanwhile and pid's peak resident set during it.
func Measure(pid int, work func() error) (cpu time.Duration, peak int64, err error) {
	if err := ResetPeakRSS(pid); err != nil {
		return 0, 0, err
	}
	cpu0, err := ProcessCPU(pid)
	if err != nil {
		return 0, 0, err
	}
	if err := work(); err != nil {
		return 0, 0, err
	}
	cpu1, err := ProcessCPU(pid)
	if err != nil {
		return 0, 0, err
	}
	peak, err = PeakRSSOf(pid)
	return cpu1 - cpu0, peak, err
}

// LoadAverage is /proc/loadavg's 1, 5 and 15 minute load averages as
// "1, 5, 15" ("unknown" if it cannot be read): the machine's load, which
// reports state since other work may share the cores.
func LoadAverage() string {
	b, err := os.ReadFile("/proc/loadavg")
	if f := strings.Fields(string(b)); err == nil && len(f) >= 3 {
		return strings.Join(f[:3], ", ")
	}
	return "unknown"
}

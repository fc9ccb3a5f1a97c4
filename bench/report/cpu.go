package report

import (
	"bufio"
	"fmt"
	"strings"
	"time"
)

// writeCPU renders the CPU time of each phase per file and per GB, for
// every system with a process: its own, then its store's.
func writeCPU(b *bufio.Writer, r *Report) {
	var systems []string
	for _, s := range r.Systems {
		if s.Name != Ceiling && s.Unavailable == "" {
			systems = append(systems, s.Name)
		}
	}
	if len(systems) == 0 {
		return
	}
	fmt.Fprintf(b, "\n## CPU per unit of work\n\n")
	fmt.Fprintf(b, "CPU time (user + system from `/proc/<pid>/stat`, live children and waited-for children included) "+
		"used during each phase, as **ms per file · ms per GB** (per entry for the walk): first the file system's "+
		"process (the direct client's own process), then, after \"store\", the object-store server's (MinIO; "+
		"fake-gcs-server for gcsfuse). After \"machine\", the busy time of every core of the machine (`/proc/stat`: "+
		"every process and the kernel, the reader, the store and the WAN emulator included) and how busy the cores were: "+
		"a phase near 100 %% is bound by this machine's CPU, and its rate ÷ that share is the most the whole chain "+
		"could reach here. Resolution 10 ms per process and phase.\n\n")
	fmt.Fprintf(b, "| Scenario | Phase | %s |\n|---|---|%s\n", strings.Join(systems, " | "), strings.Repeat("--:|", len(systems)))
	for _, row := range r.Rows {
		cells := make([]string, 0, len(systems))
		for _, s := range systems {
			cells = append(cells, cpuText(row.Cells[s]))
		}
		fmt.Fprintf(b, "| %s | %s | %s |\n", row.Scenario, row.Phase, strings.Join(cells, " | "))
	}
}

// cpuText is a cell's CPU cost, "–" when it has none.
func cpuText(c Cell) string {
	if c.Status != OK && c.Status != Partial {
		return "–"
	}
	var parts []string
	if c.CPU.System != nil {
		parts = append(parts, perUnit(*c.CPU.System, c))
	}
	if c.CPU.Store != nil {
		parts = append(parts, "store "+perUnit(*c.CPU.Store, c))
	}
	if m, t := c.CPU.Machine, c.CPU.MachineTotal; m != nil && t != nil && *t > 0 {
		parts = append(parts, fmt.Sprintf("machine %s (%.0f %% busy)", perUnit(*m, c), 100*float64(*m)/float64(*t)))
	}
	if len(parts) == 0 {
		return "–"
	}
	return strings.Join(parts, "<br>")
}

// perUnit is "ms/file · ms/GB" of d over the cell's work.
func perUnit(d time.Duration, c Cell) string {
	ms := float64(d) / float64(time.Millisecond)
	file, gb := "–", "–"
	if c.Measure.Files > 0 {
		file = number(ms / float64(c.Measure.Files))
	}
	if c.Measure.Bytes > 0 {
		gb = number(ms / (float64(c.Measure.Bytes) / 1e9))
	}
	return file + " · " + gb
}

package report

import (
	"bufio"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/basin-csi/basin/bench/dataset"
	"github.com/basin-csi/basin/bench/wanproxy"
)

// Basin is the name of Basin's column; every other system but the two
// ceilings is a peer.
const Basin = "basin"

// Direct is the name of the direct client's column (bench/direct), the
// ceiling of the cold phases.
const Direct = "direct"

// WriteMarkdown renders r; chart is the PNG's file name, next to the page.
func WriteMarkdown(w io.Writer, r *Report, chart string) error {
	b := bufio.NewWriter(w)
	var notes []string // footnotes for failed cells, numbered from 1
	writeHeader(b, r)
	writeResults(b, r, chart, &notes)
	writeCPU(b, r)
	writeRequests(b, r)
	writeRSS(b, r)
	writeSystems(b, r)
	if len(notes) > 0 {
		fmt.Fprintf(b, "\n## Failures\n\n")
		for i, n := range notes {
			fmt.Fprintf(b, "%d. %s\n", i+1, n)
		}
	}
	if len(r.Notes) > 0 {
		fmt.Fprintf(b, "\n## Notes\n\n")
		for _, n := range r.Notes {
			fmt.Fprintf(b, "- %s\n", n)
		}
	}
	return b.Flush()
}

func writeHeader(b *bufio.Writer, r *Report) {
	fmt.Fprintf(b, "# Basin benchmark — %s (%s)\n\n", r.Started.Format("2006-01-02 15:04 MST"), r.Mode)
	fmt.Fprintf(b, "- Command: `%s`\n", r.Command)
	fmt.Fprintf(b, "- Machine: %s\n", r.Machine)
	fmt.Fprintf(b, "- Duration: %s\n", r.Finished.Sub(r.Started).Round(1e9))
	p := r.Proxy
	fmt.Fprintf(b, "- WAN emulator (in front of MinIO and fake-gcs-server): time to first byte %v, %s per connection, %s aggregate, per direction\n",
		p.TTFB, bandwidth(p.ConnBandwidth), bandwidth(p.TotalBandwidth))
	var sets []string
	for _, s := range r.Sets {
		switch {
		case s.Layout == dataset.LayoutImages:
			sets = append(sets, fmt.Sprintf("%s: %d JPEGs of varied sizes in %d class dirs", s.Name, s.Files, s.Dirs))
		case s.FileSize == 0:
			sets = append(sets, fmt.Sprintf("%s: %d zero-byte objects, %d levels × %d dirs", s.Name, s.Files, s.Depth, s.Fanout))
		case s.Dirs > 0:
			sets = append(sets, fmt.Sprintf("%s: %d × %s in %d dirs", s.Name, s.Files, Size(s.FileSize), s.Dirs))
		default:
			sets = append(sets, fmt.Sprintf("%s: %d × %s", s.Name, s.Files, Size(s.FileSize)))
		}
	}
	fmt.Fprintf(b, "- Data: %s\n", strings.Join(sets, "; "))
}

func writeResults(b *bufio.Writer, r *Report, chart string, notes *[]string) {
	fmt.Fprintf(b, "\n## Results\n\n")
	fmt.Fprintf(b, "Cells: throughput in the row's unit (ratio to the local ceiling). "+
		"† = stopped at the phase deadline; the rate is that of the part done. "+
		"n/a = system not available on this machine.\n\n")
	cols := columnNames(r)
	ratios := []string{"Basin ÷ best peer"}
	withDirect := slices.ContainsFunc(r.Systems, func(s System) bool { return s.Name == Direct })
	if withDirect {
		ratios = append(ratios, "Basin ÷ direct")
	}
	fmt.Fprintf(b, "| Scenario | Phase | Unit | %s | %s |\n", strings.Join(cols, " | "), strings.Join(ratios, " | "))
	fmt.Fprintf(b, "|---|---|---|%s%s\n", strings.Repeat("--:|", len(cols)), strings.Repeat("---|", len(ratios)))
	var details []string
	for _, row := range r.Rows {
		cells := make([]string, 0, len(r.Systems))
		for _, s := range r.Systems {
			cells = append(cells, cellText(row, s.Name, notes))
			if c := row.Cells[s.Name]; c.Detail != "" {
				details = append(details, fmt.Sprintf("%s, %s %s: %s", s.Name, row.Scenario, row.Phase, c.Detail))
			}
		}
		ratios = []string{versusBestPeer(r, row)}
		if withDirect {
			ratios = append(ratios, versus(row, Direct))
		}
		fmt.Fprintf(b, "| %s | %s | %s | %s | %s |\n", row.Scenario, row.Phase, row.Unit,
			strings.Join(cells, " | "), strings.Join(ratios, " | "))
	}
	if withDirect {
		fmt.Fprintf(b, "\nThe direct client plays the cold phases' reads and writes straight against the bucket "+
			"through the same emulator, with the same threads and data (no file system): the ceiling of the cold phases; "+
			"n/a where a phase needs a cache, a mount or a file reader.\n")
	}
	if len(details) > 0 {
		fmt.Fprintf(b, "\n- %s\n", strings.Join(details, "\n- "))
	}
	if chart != "" {
		fmt.Fprintf(b, "\n![ratio to the local ceiling](%s)\n", chart)
	}
}

func columnNames(r *Report) []string {
	out := make([]string, 0, len(r.Systems))
	for _, s := range r.Systems {
		if s.Name == Ceiling {
			out = append(out, "local (ceiling)")
		} else {
			out = append(out, s.Name)
		}
	}
	return out
}

func cellText(row Row, system string, notes *[]string) string {
	c, ok := row.Cells[system]
	if !ok || c.Status == NA {
		return "n/a"
	}
	if c.Status == Failed {
		*notes = append(*notes, fmt.Sprintf("%s, %s %s: %s", system, row.Scenario, row.Phase, oneLine(c.Reason)))
		return fmt.Sprintf("failed (%d)", len(*notes))
	}
	v, _ := row.Value(system)
	text := number(v)
	if c.Status == Partial {
		text += "†"
	}
	if system == Ceiling {
		return text
	}
	if ratio, ok := row.Ratio(system); ok {
		text += " (" + times(ratio) + ")"
	}
	return text
}

// versusBestPeer is Basin's value over the best peer's in row.
func versusBestPeer(r *Report, row Row) string {
	basin, ok := row.Value(Basin)
	if !ok {
		return "–"
	}
	best, bestName := 0.0, ""
	for _, s := range r.Systems {
		if s.Name == Basin || s.Name == Ceiling || s.Name == Direct || strings.HasPrefix(s.Name, Basin+"-") {
			continue // not a peer: a ceiling, or Basin itself (basin-b, basin-async, ...)
		}
		if v, ok := row.Value(s.Name); ok && v > best {
			best, bestName = v, s.Name
		}
	}
	if bestName == "" {
		return "–"
	}
	return fmt.Sprintf("%s (%s)", times(basin/best), bestName)
}

// versus is Basin's value over system's in row.
func versus(row Row, system string) string {
	basin, ok := row.Value(Basin)
	v, vok := row.Value(system)
	if !ok || !vok || v <= 0 {
		return "–"
	}
	return times(basin / v)
}

func writeRequests(b *bufio.Writer, r *Report) {
	var systems []string
	for _, s := range r.Systems {
		if s.Name != Ceiling {
			systems = append(systems, s.Name)
		}
	}
	if len(systems) == 0 {
		return
	}
	fmt.Fprintf(b, "\n## Requests to the bucket per phase\n\n")
	fmt.Fprintf(b, "Counted by the WAN emulator: requests by kind, then MB downloaded (↓) and uploaded (↑).\n\n")
	fmt.Fprintf(b, "| Scenario | Phase | %s |\n|---|---|%s\n", strings.Join(systems, " | "), strings.Repeat("---|", len(systems)))
	for _, row := range r.Rows {
		cells := make([]string, 0, len(systems))
		for _, s := range systems {
			c, ok := row.Cells[s]
			if !ok || c.Status == NA || c.Traffic == nil {
				cells = append(cells, "–")
				continue
			}
			cells = append(cells, trafficText(c.Traffic))
		}
		fmt.Fprintf(b, "| %s | %s | %s |\n", row.Scenario, row.Phase, strings.Join(cells, " | "))
	}
}

func trafficText(t wanproxy.Snapshot) string {
	var parts []string
	for _, k := range wanproxy.Kinds {
		if n := t[k].Requests; n > 0 {
			parts = append(parts, fmt.Sprintf("%s %d", k, n))
		}
	}
	if len(parts) == 0 {
		return "none"
	}
	tot := t.Total()
	text := strings.Join(parts, ", ") + fmt.Sprintf("; %s↓", mb(tot.BytesOut))
	if tot.BytesIn > 0 {
		text += fmt.Sprintf(" %s↑", mb(tot.BytesIn))
	}
	return text
}

func writeRSS(b *bufio.Writer, r *Report) {
	fmt.Fprintf(b, "\n## Peak RSS of the FUSE process\n\n")
	fmt.Fprintf(b, "Largest VmHWM over all mounts of the run (the FUSE daemon only; the kernel page cache is not counted), and the timed phase with the largest.\n\n")
	fmt.Fprintf(b, "| System | Peak RSS | Largest phase |\n|---|--:|---|\n")
	for _, s := range r.Systems {
		switch {
		case s.Name == Ceiling:
			continue
		case s.Unavailable != "":
			fmt.Fprintf(b, "| %s | n/a | |\n", s.Name)
		default:
			fmt.Fprintf(b, "| %s | %.0f MiB | %s |\n", s.Name, float64(s.PeakRSS)/(1<<20), largestPhase(r, s.Name))
		}
	}
}

// largestPhase names the phase whose cell of system had the largest peak
// RSS, with that peak; empty when no cell has one. A phase's peak is at
// least the resident set it started with, so the phases after the one
// that raised it on the same mount show about the same figure: the first
// within 1 MiB of the largest is named.
func largestPhase(r *Report, system string) string {
	var peak int64
	for _, row := range r.Rows {
		peak = max(peak, row.Cells[system].PeakRSS)
	}
	if peak == 0 {
		return ""
	}
	for _, row := range r.Rows {
		if row.Cells[system].PeakRSS >= peak-1<<20 {
			return fmt.Sprintf("%s: %.0f MiB", row.Name(), float64(peak)/(1<<20))
		}
	}
	return ""
}

func writeSystems(b *bufio.Writer, r *Report) {
	fmt.Fprintf(b, "\n## Systems and flags\n\n")
	for _, s := range r.Systems {
		fmt.Fprintf(b, "- **%s**", s.Name)
		if s.Unavailable != "" {
			fmt.Fprintf(b, " — n/a: %s", oneLine(s.Unavailable))
		}
		fmt.Fprintf(b, "\n\n  ```\n  %s\n  ```\n\n", s.Command)
	}
}

func oneLine(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	s = strings.ReplaceAll(s, "|", "/")
	if len(s) > 400 {
		s = s[:400] + "…"
	}
	return s
}

// number formats a rate with three significant digits at most.
func number(v float64) string {
	switch {
	case v >= 100:
		return fmt.Sprintf("%.0f", v)
	case v >= 10:
		return fmt.Sprintf("%.1f", v)
	default:
		return fmt.Sprintf("%.2f", v)
	}
}

// times formats a ratio with two significant digits: 0.85×, 0.012×, 12×.
func times(r float64) string {
	switch {
	case r >= 10:
		return fmt.Sprintf("%.0f×", r)
	case r >= 1:
		return fmt.Sprintf("%.1f×", r)
	case r >= 0.1:
		return fmt.Sprintf("%.2f×", r)
	case r >= 0.01:
		return fmt.Sprintf("%.3f×", r)
	default:
		return fmt.Sprintf("%.4f×", r)
	}
}

func bandwidth(bps int64) string {
	if bps <= 0 {
		return "unlimited"
	}
	return fmt.Sprintf("%g MB/s", float64(bps)/1e6)
}

func mb(n int64) string { return fmt.Sprintf("%.0f MB", float64(n)/1e6) }

// Size is n bytes in the largest binary unit that divides it (1 GiB,
// 128 KiB, 1000 B).
func Size(n int64) string {
	switch {
	case n >= 1<<30 && n%(1<<30) == 0:
		return fmt.Sprintf("%d GiB", n>>30)
	case n >= 1<<20 && n%(1<<20) == 0:
		return fmt.Sprintf("%d MiB", n>>20)
	case n >= 1<<10 && n%(1<<10) == 0:
		return fmt.Sprintf("%d KiB", n>>10)
	default:
		return fmt.Sprintf("%d B", n)
	}
}

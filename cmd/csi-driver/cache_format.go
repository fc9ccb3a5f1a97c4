package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"
)

// Output of `csi-driver cache`: tables for people, --json for programs.
// The tables are written to a bufio.Writer, whose first error sticks and
// is returned by the Flush at the end of writeResults.

// writeJSONResults prints the results as one JSON array.
func writeJSONResults(w io.Writer, results []volumeResult) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(results)
}

// writeResults prints the results of action as tables.
func writeResults(w io.Writer, action string, results []volumeResult) error {
	b := bufio.NewWriter(w)
	switch {
	case len(results) == 0:
		fmt.Fprintln(b, "no volume caches")
	case action == "stats":
		writeStatsTable(b, results)
	case action == "ls":
		writeEntries(b, results)
	case action == "verify":
		writeVerify(b, results)
	case action == "gc":
		writeGC(b, results)
	default:
		return fmt.Errorf("unknown action %q", action)
	}
	return b.Flush()
}

// writeStatsTable prints one row per volume.
func writeStatsTable(w *bufio.Writer, results []volumeResult) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	_, _ = fmt.Fprintln(tw, "CACHE DIR\tSTATE\tUSED\tCAP\tUSE\tOBJECTS\tHIT RATIO\tLOCAL OPENS\tFROM BUCKET\tEVICTIONS\tVOLUME")
	for _, r := range results {
		if r.Stats == nil {
			_, _ = fmt.Fprintf(tw, "%s\t%s\t-\t-\t-\t-\t-\t-\t-\t-\t%s\n", r.Dir, r.State, orDash(r.VolumeID))
			continue
		}
		s := r.Stats
		ratio, localOpens, fromBucket, evictions := "-", "-", "-", "-"
		if s.Live {
			// Counters exist only in a serving process.
			localOpens, fromBucket, evictions = fmt.Sprint(s.LocalOpens), humanBytes(s.BucketBytes), fmt.Sprint(s.Evictions)
			if v, ok := s.HitRatio(); ok {
				ratio = percent(v)
			}
		}
		capacity, use := "none", "-"
		if s.CapacityBytes > 0 {
			capacity = humanBytes(s.CapacityBytes)
			use = percent(float64(s.UsedBytes) / float64(s.CapacityBytes))
		}
		_, _ = fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%d\t%s\t%s\t%s\t%s\t%s\n", r.Dir, r.State,
			humanBytes(s.UsedBytes), capacity, use, s.Objects, ratio, localOpens, fromBucket, evictions, r.VolumeID)
	}
	_ = tw.Flush() // its errors are the bufio.Writer's, which stick
	writeErrors(w, results)
}

// writeEntries prints each volume's entries under a heading.
func writeEntries(w *bufio.Writer, results []volumeResult) {
	for i, r := range results {
		if i > 0 {
			fmt.Fprintln(w)
		}
		fmt.Fprintf(w, "%s (%s, %s):", r.Dir, orDash(r.VolumeID), r.State)
		switch {
		case r.Error != "":
			fmt.Fprintf(w, " error: %s\n", r.Error)
			continue
		case len(r.Entries) == 0:
			fmt.Fprintln(w, " no cached objects")
			continue
		}
		fmt.Fprintln(w)
		tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
		_, _ = fmt.Fprintln(tw, "  LAST ACCESS\tSIZE\tCACHED\tBLOCKS\tKEY")
		for _, e := range r.Entries {
			at := "-"
			if !e.LastAccess.IsZero() {
				at = e.LastAccess.Local().Format(time.DateTime)
			}
			_, _ = fmt.Fprintf(tw, "  %s\t%s\t%s\t%d/%d\t%s\n", at, humanBytes(e.Size), humanBytes(e.AllocBytes),
				e.PresentBlocks, e.Blocks, quoteKey(e.Key))
		}
		_ = tw.Flush() // its errors are the bufio.Writer's, which stick
	}
}

// writeVerify prints each volume's verdict and its problems.
func writeVerify(w *bufio.Writer, results []volumeResult) {
	for _, r := range results {
		fmt.Fprintf(w, "%s (%s, %s): ", r.Dir, orDash(r.VolumeID), r.State)
		switch v := r.Verify; {
		case r.Error != "":
			fmt.Fprintf(w, "error: %s\n", r.Error)
		case len(v.Problems) == 0:
			fmt.Fprintf(w, "OK: %d objects, %d blocks, %s checked\n", v.Objects, v.Blocks, humanBytes(v.FileBytes))
		default:
			fmt.Fprintf(w, "%d PROBLEMS in %d objects, %d blocks:\n", len(v.Problems), v.Objects, v.Blocks)
			for _, p := range v.Problems {
				fmt.Fprintf(w, "  %s\n", p)
			}
		}
	}
}

// writeGC prints what each volume's eviction did.
func writeGC(w *bufio.Writer, results []volumeResult) {
	for _, r := range results {
		fmt.Fprintf(w, "%s (%s, %s): ", r.Dir, orDash(r.VolumeID), r.State)
		if r.Error != "" {
			fmt.Fprintf(w, "error: %s\n", r.Error)
			continue
		}
		g := r.GC
		fmt.Fprintf(w, "%s -> %s (target %s), %d objects evicted", humanBytes(g.BeforeBytes),
			humanBytes(g.AfterBytes), humanBytes(g.TargetBytes), g.Evicted)
		if g.AfterBytes > g.TargetBytes {
			fmt.Fprint(w, "; the rest is pinned by open files or being written")
		}
		fmt.Fprintln(w)
	}
}

// writeErrors lists the volumes that failed below a table.
func writeErrors(w *bufio.Writer, results []volumeResult) {
	for _, r := range results {
		if r.Error != "" {
			fmt.Fprintf(w, "%s: error: %s\n", r.Dir, r.Error)
		}
	}
}

// humanBytes formats a byte count with a binary unit and three
// significant digits at most ("0 B", "812 B", "1.5 KiB", "20.0 MiB",
// "512 GiB").
func humanBytes(n int64) string {
	const units = "KMGTPE"
	if n < 1024 && n > -1024 {
		return fmt.Sprintf("%d B", n)
	}
	v, i := float64(n)/1024, 0
	for (v >= 1024 || v <= -1024) && i < len(units)-1 {
		v /= 1024
		i++
	}
	if v >= 100 || v <= -100 {
		return fmt.Sprintf("%.0f %ciB", v, units[i])
	}
	return fmt.Sprintf("%.1f %ciB", v, units[i])
}

// percent formats a ratio as a percentage with one decimal.
func percent(r float64) string { return fmt.Sprintf("%.1f%%", 100*r) }

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// quoteKey prints a key as is unless it holds characters that would break
// the table (control characters, tabs, newlines).
func quoteKey(k string) string {
	if strings.ContainsFunc(k, func(r rune) bool { return r < 0x20 || r == 0x7f }) {
		return fmt.Sprintf("%q", k)
	}
	return k
}

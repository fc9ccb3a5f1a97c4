package warmup

import (
	"fmt"
	"strings"
	"time"
)

// Progress is a snapshot of a run.
type Progress struct {
	// Elapsed is the time since Run started.
	Elapsed time.Duration
	// Files and Bytes were warmed by this run (bytes read; with
	// MetadataOnly, the sizes of the files stat'ed).
	Files, Bytes int64
	// SkippedFiles and SkippedBytes were recorded as done in the state
	// file by an earlier run.
	SkippedFiles, SkippedBytes int64
	// FoundFiles and FoundBytes are what the walk found so far (skipped
	// files included); final once WalkDone.
	FoundFiles, FoundBytes int64
	// Dirs counts the directories listed.
	Dirs int64
	// Errors counts files and directories that could not be read.
	Errors int64
	// WalkDone: every directory has been listed.
	WalkDone bool
	// MetadataOnly: files are stat'ed, not read.
	MetadataOnly bool
	// Done: the last snapshot of the run.
	Done bool
}

// Rate is the run's throughput: bytes per second, or files per second
// with MetadataOnly.
func (p Progress) Rate() float64 {
	s := p.Elapsed.Seconds()
	if s <= 0 {
		return 0
	}
	if p.MetadataOnly {
		return float64(p.Files) / s
	}
	return float64(p.Bytes) / s
}

// ETA estimates the time left at the run's rate; ok is false until the
// walk is done (the total is unknown) or while nothing has been warmed.
func (p Progress) ETA() (time.Duration, bool) {
	rate := p.Rate()
	if !p.WalkDone || rate <= 0 {
		return 0, false
	}
	left := float64(p.FoundBytes - p.SkippedBytes - p.Bytes)
	if p.MetadataOnly {
		left = float64(p.FoundFiles - p.SkippedFiles - p.Files)
	}
	if left <= 0 {
		return 0, true
	}
	return time.Duration(left / rate * float64(time.Second)).Round(time.Second), true
}

// Fraction is the part done, in [0, 1]; ok is false until the walk is
// done.
func (p Progress) Fraction() (float64, bool) {
	if !p.WalkDone {
		return 0, false
	}
	total, done := p.FoundBytes, p.Bytes+p.SkippedBytes
	if p.MetadataOnly || total == 0 {
		total, done = p.FoundFiles, p.Files+p.SkippedFiles
	}
	if total <= 0 {
		return 1, true
	}
	return min(float64(done)/float64(total), 1), true
}

// Line is a one-line summary for logs and non-terminal output:
// "45% 1234/5000 files, 1.2 GiB of 3.4 GiB, 85.3 MiB/s, ETA 27s, 0 errors".
func (p Progress) Line() string {
	var b strings.Builder
	if f, ok := p.Fraction(); ok {
		fmt.Fprintf(&b, "%d%% ", int(f*100))
	}
	fmt.Fprintf(&b, "%d/%s files", p.Files+p.SkippedFiles, p.found(p.FoundFiles, fmt.Sprint(p.FoundFiles)))
	if p.MetadataOnly {
		fmt.Fprintf(&b, " stat'ed, %.0f files/s", p.Rate())
	} else {
		fmt.Fprintf(&b, ", %s of %s, %s/s", FormatBytes(p.Bytes+p.SkippedBytes), p.found(p.FoundBytes, FormatBytes(p.FoundBytes)), FormatBytes(int64(p.Rate())))
	}
	if eta, ok := p.ETA(); ok && !p.Done {
		fmt.Fprintf(&b, ", ETA %s", eta)
	} else if !p.WalkDone {
		b.WriteString(", still listing")
	}
	fmt.Fprintf(&b, ", %d errors", p.Errors)
	return b.String()
}

// found marks a total as a lower bound while the walk goes on.
func (p Progress) found(n int64, s string) string {
	if p.WalkDone {
		return s
	}
	return s + "+"
}

// Bar is Line with a bar of width characters in front, for a terminal.
func (p Progress) Bar(width int) string {
	f, ok := p.Fraction()
	if !ok || width < 3 {
		return "[" + strings.Repeat("?", max(width-2, 0)) + "] " + p.Line()
	}
	inner := width - 2
	n := int(f * float64(inner))
	bar := strings.Repeat("=", n)
	if n < inner {
		bar += ">" + strings.Repeat(" ", inner-n-1)
	}
	return "[" + bar + "] " + p.Line()
}

// FormatBytes renders n with binary units: "512 B", "1.5 KiB", "3.4 GiB".
func FormatBytes(n int64) string {
	const unit = 1024
	if n < unit {
		return fmt.Sprintf("%d B", n)
	}
	v, i := float64(n), 0
	for v >= unit && i < 6 {
		v /= unit
		i++
	}
	return fmt.Sprintf("%.1f %ciB", v, "KMGTPE"[i-1])
}

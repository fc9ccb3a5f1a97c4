package warmup

import (
	"encoding/json"
	"fmt"
	"os"
	"unicode/utf8"
)

// Report is a run's outcome in a few fields, for a program rather than a
// person: `csi-driver warmup --result FILE` writes it as JSON (a pod's
// termination message, which the Warmup controller reads back).
type Report struct {
	Files          int64 `json:"files"`
	Bytes          int64 `json:"bytes"`
	BytesPerSecond int64 `json:"bytesPerSecond"`
	Errors         int64 `json:"errors"`
	// Fits is "Yes", "No" or "Unknown" (not a Basin mount).
	Fits string `json:"fits"`
	// Verdict is CacheReport.Verdict, or why the run ended early.
	Verdict string `json:"verdict"`
}

// Fit verdicts of a Report.
const (
	FitsYes     = "Yes"
	FitsNo      = "No"
	FitsUnknown = "Unknown"
)

// maxReport bounds a written Report: a termination message holds 4096
// bytes, and the verdict is the only field that can grow.
const maxReport = 2048

// Report sums up res; runErr is Run's error (nil when it completed).
func (res Result) Report(runErr error) Report {
	r := Report{Files: res.Files, Bytes: res.Bytes, BytesPerSecond: int64(res.Rate()), Errors: res.Errors,
		Fits: FitsUnknown, Verdict: res.Cache.Verdict}
	if res.MetadataOnly {
		r.BytesPerSecond = 0
	}
	switch {
	case runErr != nil:
		r.Verdict = runErr.Error()
	case !res.Cache.Known:
	case res.Cache.Fits:
		r.Fits = FitsYes
	default:
		r.Fits = FitsNo
	}
	return r
}

// WriteFile writes r as JSON to path (truncating a long verdict).
func (r Report) WriteFile(path string) error {
	b, err := json.Marshal(r)
	for verdict := r.Verdict; err == nil && len(b) > maxReport && verdict != ""; {
		// Cut as many bytes as are too many (escapes make some count
		// more), on a rune boundary.
		n := max(0, len(verdict)-(len(b)-maxReport)-3)
		for n > 0 && !utf8.RuneStart(verdict[n]) {
			n--
		}
		verdict = verdict[:n]
		r.Verdict = verdict + "..."
		b, err = json.Marshal(r)
	}
	if err != nil {
		return fmt.Errorf("warmup: report: %w", err)
	}
	if err := os.WriteFile(path, b, 0o644); err != nil {
		return fmt.Errorf("warmup: report: %w", err)
	}
	return nil
}

// ParseReport reads what WriteFile wrote.
func ParseReport(b []byte) (Report, error) {
	var r Report
	if err := json.Unmarshal(b, &r); err != nil {
		return Report{}, fmt.Errorf("warmup: report: %w", err)
	}
	return r, nil
}

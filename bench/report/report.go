package report

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/basin-csi/basin/bench/dataset"
	"github.com/basin-csi/basin/bench/scenario"
	"github.com/basin-csi/basin/bench/wanproxy"
)

// Ceiling is the name of the local-directory system, the denominator of
// every ratio.
const Ceiling = "local"

// Unit is how a row's cells are expressed.
type Unit string

// The units of the rows.
const (
	FilesPerSec   Unit = "files/s"
	MBPerSec      Unit = "MB/s"
	EntriesPerSec Unit = "entries/s"
)

// Status is the state of one cell.
type Status string

// Cell states. A partial cell holds the rate of the part done before the
// phase deadline.
const (
	OK      Status = "ok"
	Partial Status = "partial"
	Failed  Status = "failed"
	NA      Status = "n/a"
)

// Cell is one system's result in one row.
type Cell struct {
	Status  Status            `json:"status"`
	Measure scenario.Measure  `json:"measure"`
	Traffic wanproxy.Snapshot `json:"traffic,omitempty"`
	// Reason explains Failed and NA cells.
	Reason string `json:"reason,omitempty"`
	// CPU is what the phase cost in CPU time.
	CPU CPU `json:"cpu,omitzero"`
	// Detail says how the figure was reached when that is not the phase's
	// usual way (the direct client's best download width).
	Detail string `json:"detail,omitempty"`
	// PeakRSS is the largest VmHWM (bytes) of the system's process during
	// the phase; 0 when unknown (no process, or it was replaced).
	PeakRSS int64 `json:"peak_rss,omitempty"`
}

// CPU is the CPU time (user + system, from /proc/<pid>/stat) used during a
// phase.
type CPU struct {
	// System is the file-system process's, with its children (the direct
	// client's process); nil when there is none (the local directory).
	System *time.Duration `json:"system_ns,omitempty"`
	// Store is the object-store server's (MinIO, fake-gcs-server), nil
	// when it does not run on this machine.
	Store *time.Duration `json:"store_ns,omitempty"`
	// Machine is the busy time of every core of the machine (every
	// process and the kernel: the reader, the store, the WAN emulator);
	// MachineTotal is the cores' wall-clock time. Machine ÷ MachineTotal
	// is how busy the cores were, and the phase's rate ÷ that share is
	// the most the whole chain could reach on these cores.
	Machine      *time.Duration `json:"machine_ns,omitempty"`
	MachineTotal *time.Duration `json:"machine_total_ns,omitempty"`
}

// Row is one phase of one scenario.
type Row struct {
	Scenario string `json:"scenario"`
	Phase    string `json:"phase"`
	// Label is the chart's short name of the row; empty means
	// "Scenario / Phase".
	Label string          `json:"label,omitempty"`
	Unit  Unit            `json:"unit"`
	Cells map[string]Cell `json:"cells"`
}

// Name is the row's short name: Label, else "Scenario / Phase".
func (r Row) Name() string {
	if r.Label != "" {
		return r.Label
	}
	return r.Scenario + " / " + r.Phase
}

// Value is the cell's figure in the row's unit; ok is false when there is
// none (failed or n/a).
func (r Row) Value(system string) (v float64, ok bool) {
	c, found := r.Cells[system]
	if !found || c.Status != OK && c.Status != Partial {
		return 0, false
	}
	switch r.Unit {
	case MBPerSec:
		return c.Measure.MBps(), true
	default:
		return c.Measure.FilesPerSec(), true
	}
}

// Ratio is the cell's value over the ceiling's in the same row.
func (r Row) Ratio(system string) (float64, bool) {
	v, ok := r.Value(system)
	c, cok := r.Value(Ceiling)
	if !ok || !cok || c <= 0 {
		return 0, false
	}
	return v / c, true
}

// System is one column of the report.
type System struct {
	Name string `json:"name"`
	// Command is the mount command with its flags (no secrets).
	Command string `json:"command"`
	// Unavailable is why the system did not run, if it did not.
	Unavailable string `json:"unavailable,omitempty"`
	// PeakRSS is the largest VmHWM of its FUSE process, bytes.
	PeakRSS int64 `json:"peak_rss"`
}

// Report is one run.
type Report struct {
	Mode     string          `json:"mode"`
	Command  string          `json:"command"`
	Machine  string          `json:"machine"`
	Started  time.Time       `json:"started"`
	Finished time.Time       `json:"finished"`
	Proxy    wanproxy.Config `json:"proxy"`
	Sets     []dataset.Set   `json:"sets"`
	// Systems in column order; the ceiling last.
	Systems []System `json:"systems"`
	Rows    []Row    `json:"rows"`
	Notes   []string `json:"notes,omitempty"`
}

// BaseName is the file name stem of the run's outputs: the start date,
// with "-quick" for a quick run.
func (r *Report) BaseName() string {
	name := r.Started.Format("2006-01-02")
	if r.Mode != "" && r.Mode != "full" {
		name += "-" + r.Mode
	}
	return name
}

// WriteFiles writes <base>.md, <base>.png and <base>.json into dir and
// returns the Markdown file's path. A second run of the same day does not
// overwrite the first: its base gets "-2", "-3", ... appended.
func (r *Report) WriteFiles(dir string) (string, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	stem := filepath.Join(dir, r.BaseName())
	base := stem
	// Taken while its .md exists (an unreadable one: creating it says why).
	for n := 2; fileExists(base + ".md"); n++ {
		base = fmt.Sprintf("%s-%d", stem, n)
	}
	png, err := os.Create(base + ".png")
	if err != nil {
		return "", err
	}
	if err := WriteChart(png, r); err != nil {
		_ = png.Close()
		return "", fmt.Errorf("report: chart: %w", err)
	}
	if err := png.Close(); err != nil {
		return "", err
	}
	raw, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return "", err
	}
	if err := os.WriteFile(base+".json", raw, 0o644); err != nil {
		return "", err
	}
	md, err := os.Create(base + ".md")
	if err != nil {
		return "", err
	}
	if err := WriteMarkdown(md, r, filepath.Base(base)+".png"); err != nil {
		_ = md.Close()
		return "", err
	}
	return base + ".md", md.Close()
}

func fileExists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}

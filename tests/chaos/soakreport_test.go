package chaos

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/basin-csi/basin/bench/report"
)

// soakReport is a soak's figures.
type soakReport struct {
	Seed          uint64
	Duration      time.Duration
	Faults        map[string]int // carried out, by kind
	Skipped       map[string]int
	Ops           map[string]int64 // by kind of operation, all volumes
	Errors        int64            // failing errors
	KernelEIO     int              // EIO of a call in flight at a kill (the kernel's; counted apart)
	RemountErrs   int64            // errors of calls during a remount and of files open across it (by design)
	StoreDownErrs int64            // EIO of calls that retried through a MinIO restart and gave up (by design)
	Acks          int64
	Verified      int64
	Lost          []string
	MaxStall      time.Duration
	MaxStallWhat  string
	Start, End    leaks
	First, Last   sample
	PeakNode      int64 // peak RSS of the node plugin
	PeakFUSE      int64 // peak RSS of all FUSE processes together
	ErrorExamples []string
}

// summarize classifies the workers' errors and gathers the figures.
func (s *soakRig) summarize(seed uint64, d time.Duration, in *injector, start, end leaks, sp *sampler) soakReport {
	rep := soakReport{Seed: seed, Duration: d, Ops: map[string]int64{}, Start: start, End: end}
	rep.Faults, rep.Skipped = in.byKind()
	in.mu.Lock()
	kills := append([]killAt(nil), in.kills...)
	remounts := in.remounts
	outages := storeOutages(in.done)
	in.mu.Unlock()
	for _, v := range s.vols {
		for _, c := range []*soakChild{v.reader, v.writer} {
			kinds, errOps := c.snapshot()
			var total int64
			for k, st := range kinds {
				rep.Ops[k] += st.Ops
				total += st.Errors
				if d := time.Duration(st.MaxNs); d > rep.MaxStall {
					rep.MaxStall = d
					rep.MaxStallWhat = fmt.Sprintf("%s %s at %s", c.name, k, time.Unix(0, st.MaxAt).UTC().Format("15:04:05.000"))
				}
			}
			var counted int64
			for _, run := range errOps {
				counted += run.Count
				switch {
				case inRemount(run.opRecord, remounts[v.idx]):
					rep.RemountErrs += run.Count
				case run.Count == 1 && isKernelEIO(run.opRecord, kills):
					rep.KernelEIO++
				case inStoreRestart(run.opRecord, run.Err, outages):
					rep.StoreDownErrs += run.Count
				default:
					rep.Errors += run.Count
					if len(rep.ErrorExamples) < 20 {
						rep.ErrorExamples = append(rep.ErrorExamples, fmt.Sprintf("%s %s ×%d from %s to %s: %s", c.name, run.Kind, run.Count,
							time.Unix(0, run.Start).UTC().Format("15:04:05.000"), time.Unix(0, run.End).UTC().Format("15:04:05.000"), run.Err))
					}
				}
			}
			// Past maxErrOps the failures are not classified: all count.
			rep.Errors += total - counted
		}
		acks, verified, lost := v.ledger.counts()
		rep.Acks += acks
		rep.Verified += verified
		rep.Lost = append(rep.Lost, lost...)
	}
	samples := sp.all()
	if len(samples) > 0 {
		rep.First, rep.Last = samples[0], samples[len(samples)-1]
	}
	for _, m := range samples {
		rep.PeakNode = max(rep.PeakNode, m.NodeRSS)
		rep.PeakFUSE = max(rep.PeakFUSE, m.FUSERSS)
	}
	if rep.Errors > 0 {
		s.failf("%d errors besides the kernel's EIO at a kill, open files across a remount and calls that gave up during a MinIO restart; first: %s", rep.Errors, oneLine(rep.ErrorExamples))
	}
	for _, l := range rep.Lost {
		s.failf("lost: %s", l)
	}
	if rep.MaxStall > soakStallBound {
		s.failf("a call took %v (%s), over the bound of %v", rep.MaxStall, rep.MaxStallWhat, soakStallBound)
	}
	return rep
}

// remountGrace is how long after a remount served again the calls on
// files opened before it may still fail (a kept-open reader reads on for
// a while; the writer's current file fails at its next call).
const remountGrace = 10 * time.Second

// inRemount reports whether op (or a run of failed ops) overlapped a
// remount of its volume and ended within remountGrace of its heal.
func inRemount(op opRecord, remounts []killAt) bool {
	for _, r := range remounts {
		if overlapsEndingBy(op, r.at, r.healed.Add(remountGrace)) {
			return true
		}
	}
	return false
}

// overlapsEndingBy reports whether op (or a run of failed ops) overlapped
// [from, until] and ended by until.
func overlapsEndingBy(op opRecord, from, until time.Time) bool {
	return op.Start < until.UnixNano() && op.End > from.UnixNano() && op.End <= until.UnixNano()
}

// storeRestartGrace is how long after MinIO answered again a call that
// gave up during its restart may end.
const storeRestartGrace = 2 * time.Second

// inStoreRestart reports whether op failed with EIO because the bucket was
// down: it overlapped an outage with a MinIO restart (storeOutages) and
// ended by storeRestartGrace after it. Basin retries a request a bounded
// number of times (5 attempts, jittered backoff, 15 s on average) and then
// answers EIO: a store down longer than that fails calls by design ("store
// down: bounded retries, then EIO, never a hang"). A restart ends when
// MinIO serves the volumes again (storeServes), which under the soak's CPU
// burners came up to 20 s after its health check answered.
func inStoreRestart(op opRecord, errText string, outages []outage) bool {
	if !strings.Contains(errText, "input/output error") {
		return false
	}
	for _, o := range outages {
		if overlapsEndingBy(op, o.Start, o.End.Add(storeRestartGrace)) {
			return true
		}
	}
	return false
}

// outage is a time MinIO did not serve.
type outage struct{ Start, End time.Time }

// outageGap: MinIO faults this close together make one outage.
const outageGap = time.Second

// storeOutages merges the MinIO faults carried out (restarts and pauses)
// that follow one another within outageGap, and returns the merged
// outages that include a restart: a pause right after a restart (the
// schedule overlaps faults; MinIO's lock runs them one after the other)
// keeps the store down as long as the two together, and the retry budget
// counts the whole. A pause alone holds calls without failing them.
func storeOutages(done []injected) []outage {
	var evs []injected
	for _, ev := range done {
		if (ev.Kind == "minio-restart" || ev.Kind == "minio-stop") && ev.Skipped == "" {
			evs = append(evs, ev)
		}
	}
	slices.SortFunc(evs, func(a, b injected) int { return a.Start.Compare(b.Start) })
	var out []outage
	var cur outage
	restart := false // cur includes a restart
	for i, ev := range evs {
		if i == 0 || ev.Start.After(cur.End.Add(outageGap)) {
			if restart {
				out = append(out, cur)
			}
			cur, restart = outage{Start: ev.Start, End: ev.End}, false
		} else if ev.End.After(cur.End) {
			cur.End = ev.End
		}
		restart = restart || ev.Kind == "minio-restart"
	}
	if restart {
		out = append(out, cur)
	}
	return out
}

// isKernelEIO reports whether op failed with EIO while in flight at a
// kill (docs/architecture.md, "A request copied at the kill").
func isKernelEIO(op opRecord, kills []killAt) bool {
	_, kernel := classifyKillErrors([]opRecord{op}, kills)
	return len(kernel) == 1
}

// line is the summary line the soak prints last.
func (r soakReport) line(pass bool, dir string) string {
	verdict := "PASS"
	if !pass {
		verdict = "FAIL"
	}
	faults, ops := 0, int64(0)
	for _, n := range r.Faults {
		faults += n
	}
	for _, n := range r.Ops {
		ops += n
	}
	return fmt.Sprintf("soak: %s seed=%d duration=%v faults=%d ops=%d errors=%d lost=%d acks=%d kernel_eio=%d remount_errors=%d store_down_errors=%d max_stall_ms=%d node_rss_mib=%d→%d fuse_rss_mib=%d→%d node_fds=%d→%d fuse_fds=%d→%d fuse_fds_but_data=%d→%d dir=%s",
		verdict, r.Seed, r.Duration, faults, ops, r.Errors, len(r.Lost), r.Acks, r.KernelEIO, r.RemountErrs, r.StoreDownErrs, r.MaxStall.Milliseconds(),
		r.First.NodeRSS>>20, r.Last.NodeRSS>>20, r.First.FUSERSS>>20, r.Last.FUSERSS>>20,
		r.First.NodeFDs, r.Last.NodeFDs, r.First.FUSEFDs, r.Last.FUSEFDs,
		r.First.FUSEFDs-r.First.FUSEDataFDs, r.Last.FUSEFDs-r.Last.FUSEDataFDs, dir)
}

// writeReport writes report.md, samples.csv, faults.txt and
// resources.png into the report directory.
func (s *soakRig) writeReport(r soakReport, sp *sampler, in *injector) {
	samples := sp.all()
	var csv strings.Builder
	csv.WriteString("seconds,node_rss_bytes,node_fds,holder_rss_bytes,holder_fds,fuse_rss_bytes,fuse_fds,fuse_data_fds,fuse_procs,node_goroutines,mounts,staged\n")
	for _, m := range samples {
		fmt.Fprintf(&csv, "%.0f,%d,%d,%d,%d,%d,%d,%d,%d,%d,%d,%d\n", m.At.Seconds(), m.NodeRSS, m.NodeFDs, m.HolderRSS, m.HolderFDs,
			m.FUSERSS, m.FUSEFDs, m.FUSEDataFDs, m.FUSEProcs, m.Goroutines, m.Mounts, m.Staged)
	}
	s.writeFile("samples.csv", csv.String())

	var ft strings.Builder
	in.mu.Lock()
	for _, ev := range in.done {
		fmt.Fprintf(&ft, "%s %-13s vol=%d for=%-8v took=%-8v %s%s\n", ev.Start.UTC().Format("15:04:05.000"), ev.Kind, ev.Volume, ev.For,
			ev.End.Sub(ev.Start).Round(time.Millisecond), ev.Skipped, ev.Note)
	}
	in.mu.Unlock()
	s.writeFile("faults.txt", ft.String())

	series := []report.Series{
		{Name: "node plugin RSS (MiB)", Unit: "MiB"}, {Name: "FUSE processes RSS, all (MiB)", Unit: "MiB"},
		{Name: "node plugin fds", Unit: "fds"}, {Name: "FUSE processes fds, all", Unit: "fds"},
		{Name: "FUSE processes fds but cached data files", Unit: "fds"},
	}
	for _, m := range samples {
		x := m.At.Minutes()
		series[0].Points = append(series[0].Points, report.Point{X: x, Y: float64(m.NodeRSS) / (1 << 20)})
		series[1].Points = append(series[1].Points, report.Point{X: x, Y: float64(m.FUSERSS) / (1 << 20)})
		series[2].Points = append(series[2].Points, report.Point{X: x, Y: float64(m.NodeFDs)})
		series[3].Points = append(series[3].Points, report.Point{X: x, Y: float64(m.FUSEFDs)})
		series[4].Points = append(series[4].Points, report.Point{X: x, Y: float64(m.FUSEFDs - m.FUSEDataFDs)})
	}
	if f, err := os.Create(filepath.Join(s.out, "resources.png")); err == nil {
		if err := report.WriteLineChart(f, fmt.Sprintf("soak seed %d: RSS and descriptors", r.Seed), "minutes", series); err != nil {
			s.logf("chart: %v", err)
		}
		_ = f.Close()
	}

	var b strings.Builder
	fmt.Fprintf(&b, "# Soak, seed %d, %v\n\n", r.Seed, r.Duration)
	fmt.Fprintf(&b, "Replay: `make soak DURATION=%v SOAK_SEED=%d`\n\n", r.Duration, r.Seed)
	fmt.Fprintf(&b, "| figure | value |\n|---|---|\n")
	row := func(k string, v any) { fmt.Fprintf(&b, "| %s | %v |\n", k, v) }
	for _, k := range sortedKeys(r.Faults) {
		row("faults: "+k, fmt.Sprintf("%d (skipped %d)", r.Faults[k], r.Skipped[k]))
	}
	for _, k := range sortedKeys(r.Ops) {
		row("operations: "+k, r.Ops[k])
	}
	row("errors (failing)", r.Errors)
	row("kernel EIO at a kill (counted apart)", r.KernelEIO)
	row("errors of files open across a remount (by design)", r.RemountErrs)
	row("EIO of calls that gave up during a MinIO restart (by design)", r.StoreDownErrs)
	row("acknowledged changes / verified in the bucket", fmt.Sprintf("%d / %d", r.Acks, r.Verified))
	row("lost acknowledged changes", len(r.Lost))
	row("max stall (bound "+soakStallBound.String()+")", fmt.Sprintf("%v (%s)", r.MaxStall.Round(time.Millisecond), r.MaxStallWhat))
	row("node plugin RSS start → end (peak)", fmt.Sprintf("%d → %d MiB (%d)", r.First.NodeRSS>>20, r.Last.NodeRSS>>20, r.PeakNode>>20))
	row("FUSE processes RSS start → end (peak)", fmt.Sprintf("%d → %d MiB (%d)", r.First.FUSERSS>>20, r.Last.FUSERSS>>20, r.PeakFUSE>>20))
	row("node plugin fds start → end", fmt.Sprintf("%d → %d", r.First.NodeFDs, r.Last.NodeFDs))
	row("FUSE processes fds start → end", fmt.Sprintf("%d → %d", r.First.FUSEFDs, r.Last.FUSEFDs))
	row("of which cached data files (the idle tier's, bounded)", fmt.Sprintf("%d → %d", r.First.FUSEDataFDs, r.Last.FUSEDataFDs))
	row("leak count at start", r.Start)
	row("leak count at end", r.End)
	fmt.Fprintf(&b, "\n![RSS and descriptors](resources.png)\n")
	if len(r.ErrorExamples) > 0 || len(r.Lost) > 0 {
		fmt.Fprintf(&b, "\n## Failures\n\n")
		for _, e := range append(r.ErrorExamples, r.Lost...) {
			fmt.Fprintf(&b, "- %s\n", e)
		}
	}
	s.writeFile("report.md", b.String())
}

func (s *soakRig) writeFile(name, content string) {
	if err := os.WriteFile(filepath.Join(s.out, name), []byte(content), 0o644); err != nil {
		s.logf("writing %s: %v", name, err)
	}
}

// keepEvidence copies into the report directory what a failure is
// investigated with: the node plugin's log (its FUSE processes' output
// among it), each FUSE process's timeline (start, serving, heals,
// takeovers, remounts) and the mount table.
func (s *soakRig) keepEvidence() {
	b, err := os.ReadFile(s.node.logs.Name())
	if err != nil {
		s.logf("plugin log: %v", err)
		return
	}
	s.writeFile("plugin.log", string(b))
	var tl strings.Builder
	sc := bufio.NewScanner(strings.NewReader(string(b)))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		l := sc.Text()
		for _, m := range []string{"serving", "healed", "took over", "remount", "standby", "node plugin starting", "not ready", "failed"} {
			if strings.Contains(l, m) {
				tl.WriteString(l + "\n")
				break
			}
		}
	}
	s.writeFile("timelines.txt", tl.String())
	mi, _ := os.ReadFile("/proc/self/mountinfo")
	s.writeFile("mountinfo.txt", string(mi))
	var ps strings.Builder
	for _, v := range s.vols {
		for _, alt := range []bool{false, true} {
			pid, _ := s.fusePid(v.id, alt)
			fmt.Fprintf(&ps, "%s standby=%v pid=%d\n", v.id, alt, pid)
		}
	}
	s.writeFile("processes.txt", ps.String())
}

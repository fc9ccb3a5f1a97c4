package main

import (
	"fmt"
	"runtime"
	"slices"
	"strings"
	"time"

	"github.com/basin-csi/basin/bench/dataset"
	"github.com/basin-csi/basin/bench/epoch"
	benchreport "github.com/basin-csi/basin/bench/report"
)

// report collects the rows of a run and writes them as Markdown.
type report struct {
	cfg                   config
	loadBefore, loadAfter string
	sets                  []dataset.Set
	rows                  map[string][]row // by set name
}

func (rp *report) add(set dataset.Set, rows []row) {
	if rp.rows == nil {
		rp.rows = map[string][]row{}
	}
	rp.sets = append(rp.sets, set)
	rp.rows[set.Name] = rows
}

// summary is the median epoch of one kind.
type summary struct {
	what    what
	dropped bool
	n       int
	elapsed float64 // s
	files   float64 // files/s
	mbps    float64
	cpuFile float64 // ms per file
	cpuGB   float64 // s per GB
	gets    int64   // origin data GETs, all epochs
	peakRSS int64   // largest
}

func summarize(rows []row, w what, dropped bool) summary {
	s := summary{what: w, dropped: dropped}
	var el, fps, mbps, cf, cg []float64
	for _, r := range rows {
		if r.what != w || r.dropped != dropped || r.res.Elapsed <= 0 {
			continue
		}
		sec := r.res.Elapsed.Seconds()
		el, fps, mbps = append(el, sec), append(fps, float64(r.res.Files)/sec), append(mbps, float64(r.res.Bytes)/1e6/sec)
		cf = append(cf, perFile(r))
		cg = append(cg, perGB(r))
		s.gets += r.get().Requests
		s.peakRSS = max(s.peakRSS, r.peakRSS)
	}
	s.n = len(el)
	s.elapsed, s.files, s.mbps, s.cpuFile, s.cpuGB = median(el), median(fps), median(mbps), median(cf), median(cg)
	return s
}

// pairRange is the lowest and highest speed of PV2's epoch against PV1's
// warm epoch of the same round and page cache.
func pairRange(rows []row, dropped bool) string {
	b, w := map[int]float64{}, map[int]float64{}
	for _, r := range rows {
		if r.dropped == dropped && r.res.Elapsed > 0 {
			switch r.what {
			case pv2B:
				b[r.round] = r.res.Elapsed.Seconds()
			case pv1Warm:
				w[r.round] = r.res.Elapsed.Seconds()
			}
		}
	}
	var v []float64
	for round, t := range b {
		if tw, ok := w[round]; ok {
			v = append(v, tw/t)
		}
	}
	if len(v) == 0 {
		return "n/a"
	}
	return fmt.Sprintf("%.2f–%.2f", slices.Min(v), slices.Max(v))
}

func perFile(r row) float64 {
	return float64(r.cpu.Microseconds()) / 1e3 / max(1, float64(r.res.Files))
}
func perGB(r row) float64 { return r.cpu.Seconds() / max(1e-9, float64(r.res.Bytes)/1e9) }

func median(v []float64) float64 {
	if len(v) == 0 {
		return 0
	}
	v = slices.Clone(v)
	slices.Sort(v)
	if len(v)%2 == 1 {
		return v[len(v)/2]
	}
	return (v[len(v)/2-1] + v[len(v)/2]) / 2
}

// speed is how fast a ran against b: b's median time over a's.
func speed(a, b summary) float64 {
	if a.elapsed <= 0 {
		return 0
	}
	return b.elapsed / a.elapsed
}

// write writes <out>/<date>-secondpv[-quick].md and returns its path.
func (rp *report) write() (string, error) {
	var b strings.Builder
	p := rp.cfg.Proxy
	fmt.Fprintf(&b, "# A second PV of the same dataset: one FUSE process per dataset and node\n\n")
	fmt.Fprintf(&b, "`%s`, %s, %d cores, %s; load average (1, 5, 15 min) %s before, %s after (the machine is shared with other work). "+
		"Origin: MinIO behind the WAN emulator (TTFB %v, %d MB/s per connection, %d MB/s in all), its data in a tmpfs. "+
		"PV1 is `csi-driver mount --read-only` of the bucket with its own cache directory on the disk.\n\n",
		rp.cfg.Command, time.Now().UTC().Format("2006-01-02 15:04 UTC"), runtime.NumCPU(), runtime.Version(),
		rp.loadBefore, rp.loadAfter, p.TTFB, p.ConnBandwidth/1e6, p.TotalBandwidth/1e6)
	b.WriteString("- **PV1 cold**: PV1's first epoch, empty cache, page cache dropped.\n" +
		"- **PV2, bind of PV1's mount (B)**: what the node plugin builds (`pkg/driver/node_share.go`): PV2's published target (what its pod sees) is a read-only bind mount " +
		"of the data set's directory of PV1's mount (a nested prefix), made by `supervisor.LinuxKernel.Bind`; PV1's process serves it. Its first epoch is PV2's cold epoch.\n" +
		"- **PV1 warm**: PV1's next epochs: the denominator of the goal.\n" +
		"- **PV2, a process of its own (A)**: the other design's stand-in: PV1's process unmounted, a new `csi-driver mount` process over PV1's " +
		"(warm) cache directory, one per epoch: its cache holds the data, its inodes and memory start cold. Its peak RSS is the memory design A adds per PV.\n\n" +
		"Page cache **dropped**: `echo 3 > /proc/sys/vm/drop_caches` before the epoch; **kept**: not. B and PV1 warm alternate in rounds " +
		"(PV2 kept, PV1 kept, PV2 dropped, PV1 dropped, then reversed), the first right after PV1's cold epoch; A's rounds follow. Every epoch reads the files in an order of its own. " +
		"Origin requests and bytes are the emulator's counts; CPU is the FUSE process's utime + stime over the epoch (`sut.ProcessCPU`, from `/proc/PID/stat`, in 10 ms ticks); " +
		"peak RSS is its VmHWM during the epoch (reset through `clear_refs` before it). Speed ratios are median times over median times.\n\n")
	for _, set := range rp.sets {
		rows := rp.rows[set.Name]
		fmt.Fprintf(&b, "## %s: %d × %s, %d reader threads\n\n", set.Name, set.Files, benchreport.Size(set.FileSize), epoch.Threads(set, rp.cfg.Threads))
		b.WriteString("| Epoch | page cache | round | s | files/s | MB/s | origin GETs | origin GET MB | other origin requests | FUSE CPU s | CPU ms/file | CPU s/GB | peak RSS MiB | read errors |\n")
		b.WriteString("|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n")
		for _, r := range rows {
			sec := r.res.Elapsed.Seconds()
			fmt.Fprintf(&b, "| %s | %s | %d | %.2f | %.0f | %.0f | %d | %.1f | %d | %.2f | %.3f | %.2f | %d | %d |\n",
				r.what, pageCache(r.dropped), r.round, sec, float64(r.res.Files)/sec, float64(r.res.Bytes)/1e6/sec,
				r.get().Requests, float64(r.get().BytesOut)/1e6, r.others(), r.cpu.Seconds(), perFile(r), perGB(r), r.peakRSS>>20, r.res.Errors)
		}
		rp.writeSummary(&b, rows)
	}
	return rp.cfg.WriteReport("secondpv", b.String())
}

// writeSummary writes the medians, the goal's ratio and A against B.
func (rp *report) writeSummary(b *strings.Builder, rows []row) {
	cold := summarize(rows, pv1Cold, true)
	warm := map[bool]summary{true: summarize(rows, pv1Warm, true), false: summarize(rows, pv1Warm, false)}
	var sums []summary
	b.WriteString("\n| Median epoch | page cache | epochs | s | files/s | MB/s | speed ÷ PV1 warm, same page cache | CPU ms/file | CPU s/GB | origin GETs, all epochs | largest peak RSS MiB |\n")
	b.WriteString("|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n")
	for _, w := range []what{pv1Cold, pv2B, pv1Warm, pv2A} {
		for _, dropped := range []bool{false, true} {
			s := summarize(rows, w, dropped)
			if s.n == 0 {
				continue
			}
			sums = append(sums, s)
			fmt.Fprintf(b, "| %s | %s | %d | %.2f | %.0f | %.0f | %.2f | %.3f | %.2f | %d | %d |\n",
				w, pageCache(dropped), s.n, s.elapsed, s.files, s.mbps, speed(s, warm[dropped]), s.cpuFile, s.cpuGB, s.gets, s.peakRSS>>20)
		}
	}
	get := func(w what, dropped bool) summary {
		for _, s := range sums {
			if s.what == w && s.dropped == dropped {
				return s
			}
		}
		return summary{}
	}
	bDrop, bKept, aDrop, aKept := get(pv2B, true), get(pv2B, false), get(pv2A, true), get(pv2A, false)
	if bDrop.n == 0 || aDrop.n == 0 {
		b.WriteString("\n(The run stopped before every kind of epoch was played.)\n\n")
		return
	}
	first := summary{elapsed: -1}
	for _, r := range rows {
		if r.what == pv2B {
			first = summary{elapsed: r.res.Elapsed.Seconds()}
			break
		}
	}
	verdict := "met"
	if speed(bDrop, warm[true]) < 0.8 {
		verdict = "not met"
	}
	fmt.Fprintf(b, "\n**Goal** (PV2's cold epoch at ≥ 0.8 of a warm epoch, judged with the page cache dropped before both, the conservative figure: "+
		"a pod of a second team on a node where the first still runs would usually find the page cache warm): **%.2f, %s**; "+
		"with the page cache kept %.2f. Round by round (PV2's epoch against PV1's of the same round and page cache): %s dropped, %s kept. "+
		"PV2's very first epoch (the page cache as PV1's cold epoch left it) ran at %.2f of PV1's median warm epoch with the page cache kept, %.2f of the one with it dropped. PV2 made %d data GETs to the origin (A: %d). "+
		"PV2's cold epoch ran %.1f× as fast as PV1's (dropped).\n\n",
		speed(bDrop, warm[true]), verdict, speed(bKept, warm[false]), pairRange(rows, true), pairRange(rows, false),
		speed(first, warm[false]), speed(first, warm[true]), bDrop.gets+bKept.gets, aDrop.gets+aKept.gets, speed(bDrop, cold))
	fmt.Fprintf(b, "**Design A ÷ design B** (speed): %.2f with the page cache dropped, %.2f kept. "+
		"FUSE CPU per file A %.3f ms vs B %.3f ms (dropped), %.3f vs %.3f (kept). "+
		"A's second process peaked at %d MiB RSS; B adds no process (PV1's peaked at %d MiB during PV2's epochs).\n\n",
		speed(aDrop, bDrop), speed(aKept, bKept), aDrop.cpuFile, bDrop.cpuFile, aKept.cpuFile, bKept.cpuFile,
		max(aDrop.peakRSS, aKept.peakRSS)>>20, max(bDrop.peakRSS, bKept.peakRSS)>>20)
}

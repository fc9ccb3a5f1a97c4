package main

import (
	"fmt"
	"runtime"
	"strings"
	"time"

	"github.com/basin-csi/basin/bench/dataset"
	benchreport "github.com/basin-csi/basin/bench/report"
)

// report collects the rows of a run and writes them as Markdown.
type report struct {
	cfg  config
	sets []dataset.Set
	rows map[string][]row // by set name
}

func (rp *report) add(set dataset.Set, r row) {
	if rp.rows == nil {
		rp.rows = map[string][]row{}
	}
	if _, ok := rp.rows[set.Name]; !ok {
		rp.sets = append(rp.sets, set)
	}
	rp.rows[set.Name] = append(rp.rows[set.Name], r)
}

// write writes <out>/<date>-sharedtier[-quick].md and returns its path.
func (rp *report) write() (string, error) {
	var b strings.Builder
	p := rp.cfg.Proxy
	fmt.Fprintf(&b, "# Shared cache tier: three nodes, one data set\n\n")
	fmt.Fprintf(&b, "`%s`, %s, %d cores, %s. Origin: MinIO behind the WAN emulator (TTFB %v, %d MB/s per connection, %d MB/s in all); "+
		"tier: a second MinIO on loopback, no emulator; both servers keep their data in a tmpfs. Each node is a `csi-driver mount --shared-cache URL` with its own empty cache, "+
		"page cache dropped; `notier` is the same mount without `--shared-cache` (every node today). "+
		"Origin GETs and bytes are counted by the emulator; tier figures are the mount's `basin_cache_tier_*` metrics "+
		"(lookups = hits + misses; stored = tier objects uploaded, each one PUT, after the epoch's uploads drained).\n\n",
		rp.cfg.Command, time.Now().UTC().Format("2006-01-02 15:04 UTC"), runtime.NumCPU(), runtime.Version(),
		p.TTFB, p.ConnBandwidth/1e6, p.TotalBandwidth/1e6)
	for _, set := range rp.sets {
		rows := rp.rows[set.Name]
		total := set.TotalBytes()
		fmt.Fprintf(&b, "## %s: %d × %s\n\n", set.Name, set.Files, benchreport.Size(set.FileSize))
		b.WriteString("| Node | Epoch s | MB/s | files/s | origin GETs | origin MB | ÷ data set | tier lookups | tier hits | tier MB read | tier stored | tier MB stored | tier errors | read errors | peak RSS MiB |\n")
		b.WriteString("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n")
		var cold3 int64
		var first, rest []float64
		for _, r := range rows {
			name := r.node
			if r.killed {
				name += " (tier killed halfway)"
			}
			t := r.tier
			fmt.Fprintf(&b, "| %s | %.2f | %.0f | %.0f | %d | %.1f | %.2f | %.0f | %.0f | %.1f | %.0f | %.1f | %.0f | %d | %d |\n",
				name, r.elapsed.Seconds(), float64(r.bytes)/1e6/r.elapsed.Seconds(), float64(r.files)/r.elapsed.Seconds(),
				r.origin.Requests, float64(r.origin.BytesOut)/1e6, float64(r.origin.BytesOut)/float64(total),
				t["hits_total"]+t["misses_total"], t["hits_total"], t["hit_bytes_total"]/1e6,
				t["filled_total"], t["filled_bytes_total"]/1e6, t["errors_total"], r.errors, r.peakRSS>>20)
			switch r.node {
			case "node1":
				first = append(first, r.elapsed.Seconds())
				cold3 += r.origin.BytesOut
			case "node2", "node3":
				rest = append(rest, r.elapsed.Seconds())
				cold3 += r.origin.BytesOut
			}
		}
		if len(first) == 1 && len(rest) == 2 {
			fmt.Fprintf(&b, "\nThree cold epochs fetched %.2f× the data set from the origin (without the tier: 3×). "+
				"Node 2 and node 3 were %.1f× and %.1f× faster than node 1.\n\n",
				float64(cold3)/float64(total), first[0]/rest[0], first[0]/rest[1])
		}
	}
	return rp.cfg.WriteReport("sharedtier", b.String())
}

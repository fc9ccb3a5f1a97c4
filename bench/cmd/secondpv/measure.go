package main

import (
	"context"
	"fmt"
	"time"

	"github.com/basin-csi/basin/bench/dataset"
	"github.com/basin-csi/basin/bench/epoch"
	"github.com/basin-csi/basin/bench/scenario"
	"github.com/basin-csi/basin/bench/sut"
	"github.com/basin-csi/basin/bench/wanproxy"
)

// what names the volume and design an epoch reads through.
type what string

const (
	pv1Cold what = "PV1 cold"
	pv2B    what = "PV2, bind of PV1's mount (B)"
	pv1Warm what = "PV1 warm"
	pv2A    what = "PV2, a process of its own (A)"
)

// row is one measured epoch.
type row struct {
	what    what
	dropped bool // page cache dropped before it
	round   int  // 0 for PV1's cold epoch
	res     epoch.Result
	origin  wanproxy.Snapshot
	cpu     time.Duration // the FUSE process's utime + stime
	peakRSS int64         // the FUSE process's VmHWM during the epoch
}

// get is the origin's data GETs.
func (r row) get() wanproxy.Counter { return r.origin[wanproxy.KindGet] }

// others is the origin's other requests (HEAD, LIST, ...).
func (r row) others() int64 { return r.origin.Total().Requests - r.get().Requests }

// player plays the epochs of one data set.
type player struct {
	cfg     config
	proxy   *wanproxy.Proxy
	set     dataset.Set
	threads int
	epochs  uint64 // played so far: each epoch reads in an order of its own
}

// measure plays one epoch of the FUSE process pid through root (the
// bucket's root, or the set's own directory when inSetDir): drops the page
// cache if asked, reads every file once, then checks a sample (untimed).
func (p *player) measure(ctx context.Context, w what, round int, drop bool, pid int, root string, inSetDir bool) (row, error) {
	r := row{what: w, dropped: drop, round: round}
	if drop {
		if err := scenario.DropCaches(); err != nil {
			return r, err
		}
	}
	p.epochs++
	keys := epoch.Keys(p.set, 0x5ec0+p.epochs, inSetDir)
	ectx, cancel := context.WithTimeout(ctx, p.cfg.Timeout)
	defer cancel()
	before := p.proxy.Stats()
	var err error
	r.cpu, r.peakRSS, err = sut.Measure(pid, func() (err error) {
		r.res, err = epoch.Read(ectx, root, keys, p.set, p.threads, nil)
		return err
	})
	r.origin = p.proxy.Stats().Sub(before)
	if err != nil {
		return r, err
	}
	missing := ""
	if inSetDir {
		missing = p.set.Prefix()
	}
	if err := epoch.VerifySample(root, p.set, keys, missing); err != nil {
		return r, err
	}
	fmt.Printf("%s %s (%s), round %d: %d files, %.1f MB in %v; origin %d GETs %.1f MB, %d other requests; CPU %v; peak RSS %d MiB; errors %d\n",
		p.set.Name, w, pageCache(drop), round, r.res.Files, float64(r.res.Bytes)/1e6, r.res.Elapsed.Round(time.Millisecond),
		r.get().Requests, float64(r.get().BytesOut)/1e6, r.others(), r.cpu, r.peakRSS>>20, r.res.Errors)
	return r, nil
}

func pageCache(dropped bool) string {
	if dropped {
		return "dropped"
	}
	return "kept"
}

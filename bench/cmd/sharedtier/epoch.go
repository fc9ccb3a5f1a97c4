package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/basin-csi/basin/bench/dataset"
	"github.com/basin-csi/basin/bench/epoch"
	"github.com/basin-csi/basin/bench/scenario"
	"github.com/basin-csi/basin/bench/sut"
	"github.com/basin-csi/basin/bench/wanproxy"
	"github.com/basin-csi/basin/pkg/admin"
)

// row is one node's cold epoch.
type row struct {
	node    string
	tiered  bool
	elapsed time.Duration
	files   int64
	bytes   int64
	errors  int64 // files that failed to read
	origin  wanproxy.Counter
	tier    map[string]float64 // the mount's basin_cache_tier_* metrics, by name without the prefix
	peakRSS int64
	killed  bool
}

// coldEpoch mounts n with an empty cache, drops the page cache and reads
// every file of set once in random order with threads readers, counting
// files that fail instead of stopping. midway, when set, runs once half
// the files are read. It then waits for the mount's tier uploads, reads
// its metrics, checks the content of a sample of files and unmounts.
func coldEpoch(ctx context.Context, cfg config, r *rig, n sut.System, set dataset.Set, threads int, midway func()) (row, error) {
	rw := row{node: n.Name(), tiered: n.Name() != "notier", killed: midway != nil}
	if err := n.DropCache(); err != nil {
		return rw, err
	}
	mnt, err := n.Mount(ctx)
	if err != nil {
		return rw, err
	}
	mounted := true
	defer func() {
		if mounted {
			_ = n.Unmount(context.WithoutCancel(ctx))
		}
	}()
	if err := scenario.DropCaches(); err != nil {
		return rw, err
	}
	keys := epoch.Keys(set, 0x7e1, false)
	ectx, cancel := context.WithTimeout(ctx, cfg.Timeout)
	defer cancel()
	before := r.proxy.Stats()
	res, err := epoch.Read(ectx, mnt, keys, set, threads, midway)
	rw.elapsed, rw.files, rw.bytes, rw.errors = res.Elapsed, res.Files, res.Bytes, res.Errors
	rw.origin = r.proxy.Stats().Sub(before)[wanproxy.KindGet]
	if err != nil {
		return rw, err
	}
	sock := admin.SocketPath(filepath.Join(r.env.WorkDir, n.Name(), "cache"))
	if rw.tiered && !rw.killed {
		if err := waitDrained(ctx, sock); err != nil {
			return rw, err
		}
	}
	if rw.tier, err = tierMetrics(ctx, sock); err != nil {
		return rw, err
	}
	if err := epoch.VerifySample(mnt, set, keys, ""); err != nil {
		return rw, err
	}
	mounted = false
	if err := n.Unmount(ctx); err != nil {
		return rw, err
	}
	rw.peakRSS = n.PeakRSS()
	fmt.Printf("%s %s: %d files, %.1f MB in %v; origin %d GETs %.1f MB; tier %v; errors %d\n", set.Name, n.Name(),
		rw.files, float64(rw.bytes)/1e6, rw.elapsed.Round(time.Millisecond), rw.origin.Requests, float64(rw.origin.BytesOut)/1e6, rw.tier, rw.errors)
	return rw, nil
}

// metrics reads the mount's metrics on its admin socket.
func metrics(ctx context.Context, sock string) (map[string]float64, error) {
	c := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{
		DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			return (&net.Dialer{}).DialContext(ctx, "unix", sock)
		}}}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://admin/metrics", nil)
	if err != nil {
		return nil, err
	}
	resp, err := c.Do(req)
	if err != nil {
		return nil, err
	}
	defer func() { _ = resp.Body.Close() }()
	out := map[string]float64{}
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		line := sc.Text()
		name, v, ok := strings.Cut(line, " ")
		if !ok || strings.HasPrefix(line, "#") {
			continue
		}
		if f, err := strconv.ParseFloat(v, 64); err == nil {
			out[name] = f
		}
	}
	return out, sc.Err()
}

// tierMetrics is the tier's part of the mount's metrics.
func tierMetrics(ctx context.Context, sock string) (map[string]float64, error) {
	all, err := metrics(ctx, sock)
	if err != nil {
		return nil, err
	}
	out := map[string]float64{}
	for k, v := range all {
		if s, ok := strings.CutPrefix(k, "basin_cache_tier_"); ok {
			out[s] = v
		}
	}
	return out, nil
}

// waitDrained waits until the mount uploaded what it queued for the tier.
func waitDrained(ctx context.Context, sock string) error {
	for deadline := time.Now().Add(5 * time.Minute); ; {
		m, err := tierMetrics(ctx, sock)
		if err != nil {
			return err
		}
		if q, ok := m["fill_queue"]; ok && q == 0 {
			return nil
		}
		if time.Now().After(deadline) {
			return errors.New("the tier uploads did not end in 5 minutes")
		}
		time.Sleep(100 * time.Millisecond)
	}
}

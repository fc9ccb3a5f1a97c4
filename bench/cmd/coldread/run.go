package main

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"strings"

	"github.com/basin-csi/basin/bench/direct"
	"github.com/basin-csi/basin/bench/epoch"
	"github.com/basin-csi/basin/bench/servers"
	"github.com/basin-csi/basin/bench/sut"
	"github.com/basin-csi/basin/bench/wanproxy"
	"github.com/basin-csi/basin/pkg/objstore"
	"github.com/basin-csi/basin/pkg/objstore/backend"
)

func run(ctx context.Context, args []string) error {
	cfg, err := parseFlags(args)
	if err != nil {
		return err
	}
	bin := sut.FindBinary(cfg.minio, cfg.tools)
	if bin == "" {
		return fmt.Errorf("minio not found (GOBIN=%s go install github.com/minio/minio@latest)", cfg.tools)
	}
	data := filepath.Join(cfg.work, "minio")
	if !cfg.bucketOnDisk {
		data = filepath.Join(cfg.work, "minio-tmpfs")
		unmount, err := epoch.MountTmpfs(data, int64(cfg.files)*cfg.size+1<<30)
		if err != nil {
			return fmt.Errorf("%w (or use -bucket-on-disk)", err)
		}
		defer unmount()
	}
	srv, err := servers.StartMinIO(ctx, bin, data)
	if err != nil {
		return err
	}
	defer srv.Stop()
	cfg.proxy.Upstream = srv.Endpoint
	proxy, err := wanproxy.Start(cfg.proxy, "127.0.0.1:0")
	if err != nil {
		return err
	}
	defer func() { _ = proxy.Close() }()

	creds := objstore.Credentials{AccessKeyID: servers.MinIOAccessKey, SecretAccessKey: servers.MinIOSecretKey}
	oc := objstore.Config{Backend: objstore.BackendS3, Bucket: bucket, Endpoint: srv.Endpoint,
		Region: servers.MinIORegion, PathStyle: true}
	origin, err := servers.OpenBucket(ctx, oc, creds)
	if err != nil {
		return err
	}
	defer func() { _ = origin.Close() }()
	oc.Endpoint = proxy.URL()
	viaProxy, err := backend.Open(ctx, oc, creds)
	if err != nil {
		return err
	}
	defer func() { _ = viaProxy.Close() }()
	var (
		infos []objstore.ObjectInfo
		objs  []direct.Object
	)
	for i := range cfg.files {
		key := fmt.Sprintf("cold/%d-%d.bin", cfg.size, i)
		if err := ensureObject(ctx, origin, key, cfg.size); err != nil {
			return err
		}
		info, err := viaProxy.Stat(ctx, key)
		if err != nil {
			return err
		}
		infos = append(infos, info)
		objs = append(objs, direct.Object{Key: info.Key, Size: info.Size})
	}
	total := int64(cfg.files) * cfg.size

	var sides []side
	for _, p := range cfg.parallel {
		sides = append(sides, &downloadSide{store: viaProxy, objs: objs, part: cfg.part, parallel: p, toFile: cfg.toFile, work: cfg.work})
	}
	for i := range cfg.bins {
		m := &cfg.bins[i]
		m.infos = infos
		m.sys = sut.NewBasin(sut.Env{WorkDir: filepath.Join(cfg.work, "sut-"+m.label), ToolsBin: cfg.tools,
			S3: sut.S3Target{Endpoint: proxy.URL(), Bucket: bucket, Region: servers.MinIORegion,
				AccessKey: servers.MinIOAccessKey, SecretKey: servers.MinIOSecretKey}}, m.bin, append(slices.Clone(cfg.basinFlags), m.flags...)...)
		if err := m.sys.Check(ctx); err != nil {
			return fmt.Errorf("%s: %w", m.label, err)
		}
		sides = append(sides, m)
	}
	fmt.Printf("%d objects of %d MiB read one after the other; WAN: ttfb %v, %d MB/s per connection, %d MB/s total\n",
		cfg.files, cfg.size>>20, cfg.proxy.TTFB, cfg.proxy.ConnBandwidth/1e6, cfg.proxy.TotalBandwidth/1e6)
	sink := "memory"
	if cfg.toFile {
		sink = "a file under " + cfg.work
	}
	fmt.Printf("download: ranged GETs of %d MiB into %s, %v in parallel\n", cfg.part>>20, sink, cfg.parallel)
	for _, m := range cfg.bins {
		fmt.Printf("mount %s: %s\n", m.label, m.sys.Describe())
	}

	rep := newReport(sides, len(cfg.parallel), cfg.proxy.TotalBandwidth)
	for r := range cfg.rounds {
		order := make([]int, len(sides))
		for i := range order {
			order[i] = (i + r) % len(sides) // rotates who goes first
		}
		res := make([]result, len(sides))
		for _, i := range order {
			if res[i], err = measure(proxy, sides[i].read(ctx)); err != nil {
				return fmt.Errorf("%s: %w", sides[i].name(), err)
			}
		}
		fmt.Println(rep.round(r+1, res, total))
	}
	for _, m := range cfg.bins {
		rep.peak[m.label] = m.sys.PeakRSS()
	}
	fmt.Print(rep.summary())
	return nil
}

// report gathers the rounds' figures. Sides [0, ndl) are downloads, the
// rest mounts.
type report struct {
	sides []side
	ndl   int
	link  int64 // emulated aggregate bytes/s; 0: unlimited
	mbps  [][]float64
	toDL  [][]float64 // per mount: ratio to the round's best download
	toA   [][]float64 // per mount: ratio to the first mount's rate
	peak  map[string]int64
}

func newReport(sides []side, ndl int, link int64) *report {
	return &report{sides: sides, ndl: ndl, link: link, mbps: make([][]float64, len(sides)),
		toDL: make([][]float64, len(sides)), toA: make([][]float64, len(sides)), peak: map[string]int64{}}
}

// round records one round and returns its line.
func (rp *report) round(n int, res []result, size int64) string {
	var b strings.Builder
	fmt.Fprintf(&b, "round %d:", n)
	best := 0.0
	for i, r := range res {
		v := r.mbps(size)
		rp.mbps[i] = append(rp.mbps[i], v)
		if i < rp.ndl {
			best = max(best, v)
		}
		fmt.Fprintf(&b, " %s %4.0f MB/s (%d GETs);", rp.sides[i].name(), v, r.gets)
	}
	for i := rp.ndl; i < len(res); i++ {
		v := res[i].mbps(size)
		rp.toDL[i] = append(rp.toDL[i], v/best)
		rp.toA[i] = append(rp.toA[i], v/res[rp.ndl].mbps(size))
		fmt.Fprintf(&b, " %s/download %.2f;", rp.sides[i].name(), v/best)
	}
	return strings.TrimSuffix(b.String(), ";")
}

func (rp *report) summary() string {
	var b strings.Builder
	fmt.Fprintf(&b, "medians over %d rounds:\n", len(rp.mbps[0]))
	for i, s := range rp.sides {
		v := medianOf(rp.mbps[i])
		fmt.Fprintf(&b, "  %-12s %5.0f MB/s", s.name(), v)
		if rp.link > 0 {
			fmt.Fprintf(&b, "  %.2f of the link (%d MB/s)", v*1e6/float64(rp.link), rp.link/1e6)
		}
		if i >= rp.ndl {
			fmt.Fprintf(&b, "  %.2f of the best download (min %.2f, max %.2f)", medianOf(rp.toDL[i]), slices.Min(rp.toDL[i]), slices.Max(rp.toDL[i]))
			if i > rp.ndl {
				fmt.Fprintf(&b, "  %.2f× %s", medianOf(rp.toA[i]), rp.sides[rp.ndl].name())
			}
			fmt.Fprintf(&b, "  peak RSS %d MiB", rp.peak[s.name()]>>20)
		}
		b.WriteByte('\n')
	}
	return b.String()
}

func medianOf(v []float64) float64 {
	s := slices.Clone(v)
	slices.Sort(s)
	return median(s)
}

func median(sorted []float64) float64 {
	n := len(sorted)
	if n%2 == 1 {
		return sorted[n/2]
	}
	return (sorted[n/2-1] + sorted[n/2]) / 2
}

package metrics

import (
	"context"
	"sort"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"google.golang.org/protobuf/proto"
	"k8s.io/klog/v2"

	"github.com/basin-csi/basin/pkg/admin"
)

// VolumeLabel is the label the node plugin adds to each FUSE process's
// metrics.
const VolumeLabel = "volume"

// NodeVolume is one volume staged on the node.
type NodeVolume struct {
	VolumeID string
	// CacheDir holds the volume's admin socket.
	CacheDir string
	// Served: the supervisor runs a FUSE process for it; Healthy: that
	// process answers and is not being healed.
	Served, Healthy bool
	// Heals counts heals since the volume was staged.
	Heals int64
}

// NodeSource is what the node plugin knows about its volumes.
type NodeSource interface {
	// Heals counts the heals of all volumes since the plugin started.
	Heals() int64
	// Volumes lists the staged volumes.
	Volumes(ctx context.Context) []NodeVolume
}

// NodeOptions tune NewNodeGatherer.
type NodeOptions struct {
	// ScrapeTimeout bounds the scrape of one volume's FUSE process
	// (default 5s).
	ScrapeTimeout time.Duration
	// Parallel bounds concurrent scrapes (default 8).
	Parallel int
}

// NewNodeGatherer registers the node collector with reg and returns what
// the node plugin serves at /metrics: reg's metrics, and every staged
// volume's FUSE process metrics, scraped over its admin socket at each
// Gather and labelled with the volume.
func NewNodeGatherer(reg *prometheus.Registry, src NodeSource, opts NodeOptions) (prometheus.Gatherer, error) {
	if opts.ScrapeTimeout <= 0 {
		opts.ScrapeTimeout = 5 * time.Second
	}
	if opts.Parallel <= 0 {
		opts.Parallel = 8
	}
	if err := reg.Register(&nodeCollector{src: src}); err != nil {
		return nil, err
	}
	vg := &volumeGatherer{src: src, opts: opts}
	return prometheus.Gatherers{reg, vg}, nil
}

var (
	descNodeHeals   = desc("basin_node_heals_total", "Heals of FUSE mounts (dead or hung FUSE processes) since the node plugin started.")
	descStaged      = desc("basin_node_staged_volumes", "Volumes staged on the node.")
	descVolumeHeals = prometheus.NewDesc("basin_volume_heals_total", "Heals of the volume's FUSE mount since it was staged.", []string{VolumeLabel}, nil)
	descHealthy     = prometheus.NewDesc("basin_volume_healthy", "1 while a FUSE process serves the volume and it is not being healed.", []string{VolumeLabel}, nil)
)

// nodeCollector exports the node's own view of its volumes.
type nodeCollector struct {
	src NodeSource // constant
}

func (c *nodeCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- descNodeHeals
	ch <- descStaged
	ch <- descVolumeHeals
	ch <- descHealthy
}

func (c *nodeCollector) Collect(ch chan<- prometheus.Metric) {
	ch <- prometheus.MustNewConstMetric(descNodeHeals, prometheus.CounterValue, float64(c.src.Heals()))
	vols := c.src.Volumes(context.Background())
	ch <- prometheus.MustNewConstMetric(descStaged, prometheus.GaugeValue, float64(len(vols)))
	for _, v := range vols {
		healthy := 0.0
		if v.Served && v.Healthy {
			healthy = 1
		}
		ch <- prometheus.MustNewConstMetric(descVolumeHeals, prometheus.CounterValue, float64(v.Heals), v.VolumeID)
		ch <- prometheus.MustNewConstMetric(descHealthy, prometheus.GaugeValue, healthy, v.VolumeID)
	}
}

// volumeGatherer scrapes the FUSE processes of the staged volumes.
type volumeGatherer struct {
	// constant
	src  NodeSource
	opts NodeOptions
}

// scraped is one volume's families, or why there are none.
type scraped struct {
	volume string
	mfs    []*dto.MetricFamily
	err    error
}

// Gather never fails: a volume whose process does not answer shows up as
// basin_volume_scrape_up 0.
func (g *volumeGatherer) Gather() ([]*dto.MetricFamily, error) {
	vols := g.src.Volumes(context.Background())
	results := make([]scraped, len(vols))
	sem := make(chan struct{}, g.opts.Parallel)
	var wg sync.WaitGroup
	for i, v := range vols {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer func() { <-sem; wg.Done() }()
			ctx, cancel := context.WithTimeout(context.Background(), g.opts.ScrapeTimeout)
			defer cancel()
			mfs, err := admin.NewClient(admin.SocketPath(v.CacheDir)).Metrics(ctx)
			results[i] = scraped{volume: v.VolumeID, mfs: mfs, err: err}
		}()
	}
	wg.Wait()
	return mergeVolumes(results), nil
}

// mergeVolumes joins the volumes' families by name, adding the volume
// label to every metric, plus basin_volume_scrape_up.
func mergeVolumes(results []scraped) []*dto.MetricFamily {
	byName := map[string]*dto.MetricFamily{}
	up := &dto.MetricFamily{
		Name: proto.String("basin_volume_scrape_up"),
		Help: proto.String("1 if the volume's FUSE process answered the metrics scrape on its admin socket."),
		Type: dto.MetricType_GAUGE.Enum(),
	}
	for _, r := range results {
		v := 1.0
		if r.err != nil {
			v = 0
			klog.V(2).InfoS("Scraping a volume's FUSE process failed", "volume", r.volume, "err", r.err)
		}
		up.Metric = append(up.Metric, &dto.Metric{
			Label: []*dto.LabelPair{{Name: proto.String(VolumeLabel), Value: proto.String(r.volume)}},
			Gauge: &dto.Gauge{Value: proto.Float64(v)},
		})
		for _, mf := range r.mfs {
			have := byName[mf.GetName()]
			if have == nil {
				have = &dto.MetricFamily{Name: mf.Name, Help: mf.Help, Type: mf.Type, Unit: mf.Unit}
				byName[mf.GetName()] = have
			} else if have.GetType() != mf.GetType() {
				klog.V(2).InfoS("Metric type differs between volumes; skipped", "volume", r.volume, "metric", mf.GetName())
				continue
			}
			for _, m := range mf.Metric {
				have.Metric = append(have.Metric, withVolume(m, r.volume))
			}
		}
	}
	out := []*dto.MetricFamily{up}
	for _, mf := range byName {
		out = append(out, mf)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].GetName() < out[j].GetName() })
	return out
}

// withVolume sets m's volume label (replacing one it had) and keeps the
// labels sorted by name.
func withVolume(m *dto.Metric, volume string) *dto.Metric {
	labels := make([]*dto.LabelPair, 0, len(m.Label)+1)
	for _, l := range m.Label {
		if l.GetName() != VolumeLabel {
			labels = append(labels, l)
		}
	}
	labels = append(labels, &dto.LabelPair{Name: proto.String(VolumeLabel), Value: proto.String(volume)})
	sort.Slice(labels, func(i, j int) bool { return labels[i].GetName() < labels[j].GetName() })
	m.Label = labels
	return m
}

package metrics

import (
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"

	"github.com/basin-csi/basin/pkg/cache"
	"github.com/basin-csi/basin/pkg/fuse"
)

// Sources are where a FUSE process's metrics come from. Each func is
// called once per scrape; nil ones are skipped.
type Sources struct {
	Cache  func() cache.Stats
	Pinned func() int64
	FS     func() fuse.Stats
}

// NewProcessRegistry returns the registry of one FUSE process with the
// process collector and the bucket metrics (the returned StoreMetrics, to
// Wrap the store with). RegisterSources adds the cache and file system
// once they are open.
func NewProcessRegistry() (*prometheus.Registry, *StoreMetrics, error) {
	reg := prometheus.NewRegistry()
	if err := reg.Register(collectors.NewProcessCollector(collectors.ProcessCollectorOpts{})); err != nil {
		return nil, nil, err
	}
	sm, err := NewStoreMetrics(reg)
	if err != nil {
		return nil, nil, err
	}
	return reg, sm, nil
}

// RegisterSources registers a collector reading src at every scrape.
func RegisterSources(reg prometheus.Registerer, src Sources) error {
	return reg.Register(&sourceCollector{src: src})
}

func desc(name, help string) *prometheus.Desc { return prometheus.NewDesc(name, help, nil, nil) }

// Descriptions of the collected metrics.
var (
	descHits            = desc("basin_cache_hits_total", "Reads the cache served from its blocks (reads of fully cached files are served from the local file instead: see basin_cache_local_opens_total).")
	descMisses          = desc("basin_cache_misses_total", "Reads that needed blocks from the bucket.")
	descHitBytes        = desc("basin_cache_hit_bytes_total", "Bytes of reads served from the cache.")
	descMissBytes       = desc("basin_cache_miss_bytes_total", "Bytes of reads that needed the bucket.")
	descLocalOpens      = desc("basin_cache_local_opens_total", "Opens of fully cached files served from their local cache file (FUSE passthrough or spliced reads): their reads count in no hit counter.")
	descEvictions       = desc("basin_cache_evictions_total", "Objects evicted from the cache.")
	descUsed            = desc("basin_cache_used_bytes", "Bytes the cache allocates on disk.")
	descCapacity        = desc("basin_cache_capacity_bytes", "The cache's size cap (0: only the disk's free-space floor limits it).")
	descObjects         = desc("basin_cache_objects", "Objects in the cache.")
	descBuffers         = desc("basin_cache_buffer_bytes", "Memory of the cache's block buffers (fetches in flight, blocks kept for readers, free buffers not yet given back), outside the Go heap.")
	descPrefetchObjects = desc("basin_cache_prefetch_objects_total", "Small objects directory prefetch fetched in the background.")
	descPrefetchBytes   = desc("basin_cache_prefetch_bytes_total", "Bytes directory prefetch fetched.")
	descPrefetchRead    = desc("basin_cache_prefetch_read_bytes_total", "Prefetched bytes a reader opened later.")
	descPrefetchEvicted = desc("basin_cache_prefetch_evicted_bytes_total", "Prefetched bytes evicted before any reader opened them.")
	descPinned          = desc("basin_cache_pinned_objects", "Objects pinned by open file handles or running fetches (never evicted).")
	descPTOpens         = desc("basin_fuse_passthrough_opens_total", "Opens served by FUSE passthrough: the kernel reads the cache file directly.")
	descUserOpens       = desc("basin_fuse_user_opens_total", "Read opens served in user space.")
	descFileOpens       = desc("basin_fuse_file_opens_total", "OPEN requests of regular files (with openMode kernel only the first one of the connection arrives).")
	descInodeReads      = desc("basin_fuse_inode_readers_total", "Cache handles opened to serve READs without a file handle (openMode kernel).")
	descReadBytes       = desc("basin_fuse_read_bytes_total", "Bytes returned by user-space READ requests.")
	descUploads         = desc("basin_fuse_uploads_total", "Files written to the bucket (on close or fsync).")
	descUploadSize      = desc("basin_fuse_upload_bytes_total", "Bytes of files written to the bucket.")
	descStreams         = desc("basin_fuse_streamed_uploads_total", "Files whose upload started while they were written (a large file written sequentially).")
	descStreamed        = desc("basin_fuse_streamed_bytes_total", "Bytes of files uploaded while they were written, before their close or fsync.")
	descDirectWrites    = desc("basin_fuse_direct_write_bytes_total", "Bytes appended to the staged files of streamed uploads with O_DIRECT, past the page cache.")
	descAborted         = desc("basin_fuse_aborted_uploads_total", "Incomplete multipart uploads a dead process left in the volume (a kill during a large close), aborted so their parts are not billed.")
	descPendingUploads  = desc("basin_fuse_pending_uploads", "Files whose close was acknowledged and whose upload is pending (uploadMode: async, and the files a dead predecessor acknowledged).")
	descPendingBytes    = desc("basin_fuse_pending_upload_bytes", "Bytes of the files whose upload is pending.")
	descUploadFailures  = desc("basin_fuse_upload_failures_total", "Failed background uploads (uploadMode: async); each is retried until it succeeds.")
	descSyncFallbacks   = desc("basin_fuse_upload_sync_fallbacks_total", "Closes with uploadMode async that uploaded synchronously: over the bound on pending files or bytes, or a streamed upload under way.")
	descRecovered       = desc("basin_fuse_recovered_uploads_total", "Files a dead predecessor acknowledged and did not upload, uploaded by this process.")
	descCreateConflicts = desc("basin_fuse_create_conflicts_total", "Files created with O_EXCL in uploadMode async whose first upload met another writer's object; that object was kept under <name>.conflict-<time>.")
	descFallbacks       = prometheus.NewDesc("basin_fuse_stream_fallbacks_total", "Uploads started while a file was written and given up (the file is uploaded whole at close), by reason: rewrite, truncate, unlink, rename, error.", []string{"reason"}, nil)
)

// sourceCollector turns the Stats snapshots of a cache and a file system
// into metrics at scrape time.
type sourceCollector struct {
	src Sources // constant
}

func (c *sourceCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{descHits, descMisses, descHitBytes, descMissBytes, descLocalOpens, descEvictions,
		descUsed, descCapacity, descObjects, descBuffers, descPinned,
		descPrefetchObjects, descPrefetchBytes, descPrefetchRead, descPrefetchEvicted,
		descPTOpens, descUserOpens, descFileOpens, descInodeReads, descReadBytes, descUploads, descUploadSize, descAborted,
		descStreams, descStreamed, descDirectWrites, descPendingUploads, descPendingBytes, descUploadFailures, descSyncFallbacks, descRecovered,
		descCreateConflicts} {
		ch <- d
	}
	for _, d := range tierDescs {
		ch <- d
	}
}

func (c *sourceCollector) Collect(ch chan<- prometheus.Metric) {
	counter := func(d *prometheus.Desc, v int64) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.CounterValue, float64(v))
	}
	gauge := func(d *prometheus.Desc, v int64) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, float64(v))
	}
	if c.src.Cache != nil {
		s := c.src.Cache()
		counter(descHits, s.Hits)
		counter(descMisses, s.Misses)
		counter(descHitBytes, s.HitBytes)
		counter(descMissBytes, s.MissBytes)
		counter(descLocalOpens, s.Passthrough)
		counter(descEvictions, s.Evictions)
		gauge(descUsed, s.UsedBytes)
		gauge(descCapacity, s.Capacity)
		gauge(descObjects, s.Objects)
		gauge(descBuffers, s.BufferBytes)
		counter(descPrefetchObjects, s.PrefetchObjects)
		counter(descPrefetchBytes, s.PrefetchBytes)
		counter(descPrefetchRead, s.PrefetchReadBytes)
		counter(descPrefetchEvicted, s.PrefetchEvictedBytes)
		if s.Tiered {
			collectTier(ch, s.Tier)
		}
	}
	if c.src.Pinned != nil {
		gauge(descPinned, c.src.Pinned())
	}
	if c.src.FS != nil {
		s := c.src.FS()
		counter(descPTOpens, s.PassthroughOpens)
		counter(descUserOpens, s.UserOpens)
		counter(descFileOpens, s.FileOpens)
		counter(descInodeReads, s.InodeReaders)
		counter(descReadBytes, s.UserReadBytes)
		counter(descUploads, s.Uploads)
		counter(descUploadSize, s.UploadBytes)
		counter(descStreams, s.StreamedUploads)
		counter(descStreamed, s.StreamedBytes)
		counter(descDirectWrites, s.DirectWriteBytes)
		counter(descAborted, s.AbortedUploads)
		gauge(descPendingUploads, s.PendingUploads)
		gauge(descPendingBytes, s.PendingUploadBytes)
		counter(descUploadFailures, s.UploadFailures)
		counter(descSyncFallbacks, s.SyncFallbacks)
		counter(descRecovered, s.RecoveredUploads)
		counter(descCreateConflicts, s.CreateConflicts)
		for reason, n := range s.StreamFallbacks {
			ch <- prometheus.MustNewConstMetric(descFallbacks, prometheus.CounterValue, float64(n), reason)
		}
	}
}

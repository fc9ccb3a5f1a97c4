package metrics

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/basin-csi/basin/pkg/cache/tier"
)

// Metrics of the shared cache tier (cache.Stats.Tier), exported only by
// the processes of volumes with a sharedCache.
var (
	descTierHits      = desc("basin_cache_tier_hits_total", "Tier objects (a block, or a small object whole) the shared cache tier served instead of the bucket.")
	descTierMisses    = desc("basin_cache_tier_misses_total", "Tier reads that found nothing usable (absent, corrupt, failed, or skipped while degraded): the bucket served them.")
	descTierHitBytes  = desc("basin_cache_tier_hit_bytes_total", "Bytes the shared cache tier served.")
	descTierErrors    = desc("basin_cache_tier_errors_total", "Tier requests that failed or timed out (each one a miss, never an error to the reader).")
	descTierCorrupt   = desc("basin_cache_tier_corrupt_total", "Tier objects that failed their identity or checksum check (each one a miss).")
	descTierFilled    = desc("basin_cache_tier_filled_total", "Tier objects stored from what this volume fetched from the bucket.")
	descTierFillBytes = desc("basin_cache_tier_filled_bytes_total", "Bytes stored in the shared cache tier.")
	descTierExisting  = desc("basin_cache_tier_fill_existing_total", "Tier uploads another node had stored first (a conditional PUT that lost).")
	descTierDropped   = desc("basin_cache_tier_fill_dropped_total", "Blocks not stored in the tier: the fill queue was full or the tier degraded.")
	descTierQueue     = desc("basin_cache_tier_fill_queue", "Tier uploads queued or under way.")
	descTierQueueB    = desc("basin_cache_tier_fill_queue_bytes", "Bytes of the tier uploads queued or under way.")
	descTierRefreshed = desc("basin_cache_tier_refreshed_total", "Tier objects stored again because a hit found them older than a day (their last-modified time follows their use, for the bucket's expiration rule).")
	descTierCold      = desc("basin_cache_tier_cold_skips_total", "Tier lookups left out (counted as misses) while every recent lookup found nothing: the volume reads a data set no node stored yet.")
	descTierDegraded  = desc("basin_cache_tier_degraded", "1 while the shared cache tier fails (its last request failed, or it is skipped after errors in a row): reads go to the bucket.")
)

var tierDescs = []*prometheus.Desc{descTierHits, descTierMisses, descTierHitBytes, descTierErrors, descTierCorrupt,
	descTierFilled, descTierFillBytes, descTierExisting, descTierDropped, descTierQueue, descTierQueueB, descTierDegraded, descTierCold, descTierRefreshed}

// collectTier sends the tier's metrics.
func collectTier(ch chan<- prometheus.Metric, s tier.Stats) {
	counter := func(d *prometheus.Desc, v int64) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.CounterValue, float64(v))
	}
	gauge := func(d *prometheus.Desc, v int64) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, float64(v))
	}
	counter(descTierHits, s.Hits)
	counter(descTierMisses, s.Misses)
	counter(descTierHitBytes, s.HitBytes)
	counter(descTierErrors, s.Errors)
	counter(descTierCorrupt, s.Corrupt)
	counter(descTierCold, s.ColdSkips)
	counter(descTierRefreshed, s.Refreshed)
	counter(descTierFilled, s.Filled)
	counter(descTierFillBytes, s.FilledBytes)
	counter(descTierExisting, s.FillExisting)
	counter(descTierDropped, s.FillDropped)
	gauge(descTierQueue, s.QueueDepth)
	gauge(descTierQueueB, s.QueueBytes)
	degraded := int64(0)
	if s.Degraded {
		degraded = 1
	}
	gauge(descTierDegraded, degraded)
}

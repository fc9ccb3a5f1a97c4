// Package tiersweep keeps the shared cache tiers within their bounds: the
// controller plugin's periodic pass (csi-driver controller
// --shared-cache-sweep-interval) over every tier that a volume names with
// a bound.
//
// Contract:
//   - A tier is one sharedCache URL (endpoint, bucket, prefix). Its bounds
//     are the tightest that the volumes naming it set (sharedCacheSize,
//     sharedCacheMaxAge; each 0: none); a tier no volume bounds is never
//     listed. Its credentials are those of the first of its volumes by
//     name (the sharedCache* keys of its secret; none: the default chain).
//   - A pass over a tier is pkg/cache/tier Evict: it lists the tier's
//     objects page by page and deletes those unused for longer than the
//     maximum age, then the least recently used beyond the byte budget, at
//     most tier.DefaultMaxDeletes of them, in DeleteObjects batches.
//   - Nothing hangs: every request has its own timeout (RequestTimeout,
//     MaxAttempts tries), a pass over one tier is bounded by
//     Config.PassTimeout, and the tiers are swept one after another. A
//     failure is logged and counted, and the next pass tries again.
//   - Metrics (metrics.go): the bytes and objects of
//     each tier after a pass, the objects and bytes evicted, passes by
//     result.
//
// The package reaches the tiers through objstore only; the volumes and
// their secrets come from the caller (the PersistentVolumes, in
// cmd/csi-driver).
package tiersweep
